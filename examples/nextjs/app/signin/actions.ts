'use server';
// Sign-in and sign-out against the service's browser sessions. Sign-in is the REST call
// (POST /api/auth/session) because this server needs the session id from its Set-Cookie;
// the key is posted to this server only, and the browser keeps nothing but an HttpOnly cookie.
import type { SessionInfo } from '@agent-control-plane/client';
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { appOrigin, serviceUrl, SESSION_COOKIE } from '@/lib/config';
import { service } from '@/lib/service';

export interface SignInState {
  error: string | null;
}

export async function signIn(_previous: SignInState, form: FormData): Promise<SignInState> {
  const apiKey = String(form.get('api_key') ?? '').trim();
  if (!apiKey) return { error: 'Enter an API key.' };
  const response = await fetch(`${serviceUrl()}/api/auth/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: apiKey }),
  });
  if (response.status === 401) return { error: 'This API key is unknown or revoked.' };
  if (!response.ok) return { error: `Sign-in failed: the service answered ${response.status}.` };
  const sessionId = sessionIdFrom(response.headers.getSetCookie());
  const { expires_at } = (await response.json()) as SessionInfo;
  if (!sessionId) return { error: 'Sign-in failed: the service set no session.' };
  (await cookies()).set(SESSION_COOKIE, sessionId, {
    httpOnly: true,
    sameSite: 'strict',
    secure: appOrigin().startsWith('https:'),
    path: '/',
    ...(expires_at ? { expires: new Date(expires_at) } : {}),
  });
  redirect(safeNext(form.get('next')));
}

export async function signOut(): Promise<void> {
  const jar = await cookies();
  if (jar.has(SESSION_COOKIE)) {
    // Ends the session on the service too. If that fails (service down, session gone already),
    // the id still leaves the browser below and dies at its expiry.
    await (await service()).auth.signOut.mutate({}).catch(() => undefined);
    jar.delete(SESSION_COOKIE);
  }
  redirect('/signin');
}

function sessionIdFrom(setCookies: string[]): string | null {
  for (const header of setCookies) {
    const [pair] = header.split(';');
    const [name, ...value] = (pair ?? '').split('=');
    if (name?.trim() === SESSION_COOKIE) return value.join('=').trim() || null;
  }
  return null;
}

/** Only a path on this site: never an absolute or protocol-relative URL (an open redirect). */
function safeNext(next: FormDataEntryValue | null): string {
  const path = typeof next === 'string' ? next : '';
  return path.startsWith('/') && !path.startsWith('//') && !path.startsWith('/\\') ? path : '/';
}
