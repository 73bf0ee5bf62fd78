import { isAppClientError, type Settings } from '@agent-control-plane/client';
import { read } from '@/lib/service';
import { SettingsForm } from './settings-form';

export default async function SettingsPage() {
  const settings = await read((trpc) => trpc.settings.get.query({})).catch((error: unknown) => {
    if (isAppClientError(error) && error.data?.code === 'NOT_FOUND') return null; // nothing saved yet
    throw error;
  });
  return (
    <section>
      <h1>Settings</h1>
      <SettingsForm settings={settings satisfies Settings | null} />
    </section>
  );
}
