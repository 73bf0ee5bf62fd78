import { AutoRefresh } from '@/components/auto-refresh';
import { read } from '@/lib/service';
import { SandboxControls, StartSandbox } from './sandbox-controls';

export default async function SandboxesPage() {
  const { items: sandboxes } = await read((trpc) => trpc.sandboxes.search.query({ limit: 50 }));
  return (
    <section>
      <h1>Sandboxes</h1>
      <AutoRefresh active={sandboxes.some((s) => s.status === 'STARTING')} />
      <table>
        <thead>
          <tr>
            <th>Sandbox</th>
            <th>Spec</th>
            <th>Status</th>
            <th />
          </tr>
        </thead>
        <tbody id="sandboxes">
          {sandboxes.length === 0 && (
            <tr>
              <td colSpan={4}>No sandboxes.</td>
            </tr>
          )}
          {sandboxes.map((sandbox) => (
            <tr key={sandbox.id} data-sandbox={sandbox.id}>
              <td>{sandbox.id}</td>
              <td>{sandbox.sandbox_spec_id}</td>
              <td className="status" data-status={sandbox.status}>
                {sandbox.status}
                {sandbox.status_reason && <p className="hint">{sandbox.status_reason}</p>}
              </td>
              <td>
                {/* Only the id and status reach the browser, not the sandbox's session key. */}
                <SandboxControls id={sandbox.id} status={sandbox.status} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <StartSandbox />
    </section>
  );
}
