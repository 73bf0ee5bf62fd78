'use client';
import { useActionState } from 'react';
import { FieldErrors, Outcome } from '@/components/form-feedback';
import { idle } from '@/lib/action-result';
import { addProvider, removeProviders } from './actions';

export function ProvidersForm({ hasProviders }: { hasProviders: boolean }) {
  const [added, add, adding] = useActionState(addProvider, idle);
  const [removed, remove, removing] = useActionState(removeProviders, idle);
  return (
    <>
      <form action={add}>
        <h2>Connect a provider</h2>
        <label htmlFor="provider">Provider</label>
        <select id="provider" name="provider" defaultValue="github">
          <option value="github">GitHub</option>
          <option value="gitlab">GitLab</option>
          <option value="bitbucket">Bitbucket</option>
        </select>
        <FieldErrors errors={added.fieldErrors} field="provider" />
        <label htmlFor="token">Token</label>
        <input id="token" name="token" type="password" autoComplete="off" required />
        <FieldErrors errors={added.fieldErrors} field="provider_tokens" />
        <label htmlFor="host">Host (self-hosted only)</label>
        <input id="host" name="host" placeholder="github.example.com" />
        <Outcome result={added} />
        <button type="submit" disabled={adding}>
          Connect
        </button>
      </form>
      {hasProviders && (
        <form action={remove}>
          <Outcome result={removed} />
          <button type="submit" className="secondary" disabled={removing}>
            Remove all providers
          </button>
        </form>
      )}
    </>
  );
}
