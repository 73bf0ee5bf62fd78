'use server';
// Sign-in and sign-out against the service's browser sessions (POST/DELETE /api/auth/session).
// The key is posted to this server only; the browser keeps nothing but an HttpOnly cookie.
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { appOrigin, serviceUrl, SESSION_COOKIE } from '@/lib/config';

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
  const { expires_at } = (await response.json()) as { expires_at: string };
  if (!sessionId) return { error: 'Sign-in failed: the service set no session.' };
  (await cookies()).set(SESSION_COOKIE, sessionId, {
    httpOnly: true,
    sameSite: 'strict',
    secure: appOrigin().startsWith('https:'),
    path: '/',
    expires: new Date(expires_at),
  });
  redirect(safeNext(form.get('next')));
}

export async function signOut(): Promise<void> {
  const jar = await cookies();
  const session = jar.get(SESSION_COOKIE)?.value;
  if (session) {
    // Ends the session on the service too; a cookie-authenticated change must name its origin.
    await fetch(`${serviceUrl()}/api/auth/session`, {
      method: 'DELETE',
      headers: { cookie: `${SESSION_COOKIE}=${session}`, origin: appOrigin() },
    }).catch(() => undefined);
  }
  jar.delete(SESSION_COOKIE);
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
