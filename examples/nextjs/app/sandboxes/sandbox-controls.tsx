'use client';
// Sandbox actions called from the browser through /trpc (the session cookie authenticates
// them; the service checks their Origin). A 429 shows its retry hint.
import type { SandboxStatus } from '@agent-control-plane/client';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import { Outcome } from '@/components/form-feedback';
import { failed, succeeded, type ActionResult } from '@/lib/action-result';
import { browserClient } from '@/lib/browser-client';

function useServiceAction() {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<ActionResult | null>(null);
  async function run(call: () => Promise<unknown>, done: string) {
    setBusy(true);
    setOutcome(null);
    try {
      await call();
      setOutcome(succeeded(done));
      router.refresh();
    } catch (error) {
      setOutcome(failed(error));
    } finally {
      setBusy(false);
    }
  }
  return { busy, outcome, run };
}

export function SandboxControls({ id, status }: { id: string; status: SandboxStatus }) {
  const { busy, outcome, run } = useServiceAction();
  const sandboxes = browserClient.sandboxes;
  return (
    <>
      {status === 'PAUSED' ? (
        <button disabled={busy} onClick={() => run(() => sandboxes.resume.mutate({ sandbox_id: id }), 'Resuming.')}>
          Resume
        </button>
      ) : (
        <button disabled={busy || status !== 'RUNNING'} onClick={() => run(() => sandboxes.pause.mutate({ sandbox_id: id }), 'Paused.')}>
          Pause
        </button>
      )}
      <button className="secondary" disabled={busy} onClick={() => run(() => sandboxes.delete.mutate({ id }), 'Deleted.')}>
        Delete
      </button>
      {outcome && !outcome.ok && <Outcome result={outcome} />}
    </>
  );
}

export function StartSandbox() {
  const { busy, outcome, run } = useServiceAction();
  return (
    <>
      <button disabled={busy} onClick={() => run(() => browserClient.sandboxes.start.mutate({}), 'Sandbox starting.')}>
        Start a sandbox
      </button>
      {outcome && <Outcome result={outcome} />}
    </>
  );
}
