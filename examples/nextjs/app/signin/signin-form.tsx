'use client';
import { useActionState } from 'react';
import { signIn } from './actions';

export function SignInForm({ next }: { next: string }) {
  const [state, action, pending] = useActionState(signIn, { error: null });
  return (
    <form action={action}>
      <input type="hidden" name="next" value={next} />
      <label htmlFor="api_key">API key</label>
      <input id="api_key" name="api_key" type="password" autoComplete="off" required />
      {state.error && <p className="notice error">{state.error}</p>}
      <button type="submit" disabled={pending}>
        Sign in
      </button>
    </form>
  );
}
