import { isAppClientError } from '@agent-control-plane/client';
import { read } from '@/lib/service';
import { ProvidersForm } from './providers-form';

export default async function GitProvidersPage() {
  const settings = await read((trpc) => trpc.settings.get.query({})).catch((error: unknown) => {
    if (isAppClientError(error) && error.data?.code === 'NOT_FOUND') return null;
    throw error;
  });
  const connected = Object.entries(settings?.provider_tokens_set ?? {});
  return (
    <section>
      <h1>Git providers</h1>
      <p className="hint">Tokens are checked with the provider before they are stored, and never shown again.</p>
      <table>
        <thead>
          <tr>
            <th>Provider</th>
            <th>Host</th>
          </tr>
        </thead>
        <tbody id="providers">
          {connected.length === 0 && (
            <tr>
              <td colSpan={2}>None connected.</td>
            </tr>
          )}
          {connected.map(([provider, host]) => (
            <tr key={provider}>
              <td>{provider}</td>
              <td>{host ?? 'default'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <ProvidersForm hasProviders={connected.length > 0} />
    </section>
  );
}
