'use client';
import { useActionState } from 'react';
import { FieldErrors, Outcome } from '@/components/form-feedback';
import { idle } from '@/lib/action-result';
import { createSecret, deleteSecret } from './actions';

export function NewSecretForm() {
  const [result, create, pending] = useActionState(createSecret, idle);
  return (
    <form action={create}>
      <h2>New secret</h2>
      <label htmlFor="name">Name</label>
      <input id="name" name="name" placeholder="NPM_TOKEN" />
      <FieldErrors errors={result.fieldErrors} field="name" />
      <label htmlFor="value">Value</label>
      <input id="value" name="value" type="password" autoComplete="off" />
      <FieldErrors errors={result.fieldErrors} field="value" />
      <label htmlFor="description">Description</label>
      <input id="description" name="description" />
      <Outcome result={result} />
      <button type="submit" disabled={pending}>
        Add secret
      </button>
    </form>
  );
}

export function DeleteSecretButton({ name }: { name: string }) {
  const [result, remove, pending] = useActionState(() => deleteSecret(name), idle);
  return (
    <form action={remove}>
      <button type="submit" className="secondary" disabled={pending} aria-label={`Delete ${name}`}>
        Delete
      </button>
      {!result.ok && <Outcome result={result} />}
    </form>
  );
}
