// Server-side access to the service, as the signed-in user: the session id travels in the
// service's session cookie, never to browser JavaScript (the cookie on this app is HttpOnly).
import 'server-only';
import { createClient, isAppClientError, type AppClient } from '@agent-control-plane/client';
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { appOrigin, serviceUrl, SESSION_COOKIE } from './config';

/** Headers that authenticate a server-side call to the service, or null when signed out. */
export async function serviceAuthHeaders(): Promise<Record<string, string> | null> {
  const session = (await cookies()).get(SESSION_COOKIE)?.value;
  if (session) return { cookie: `${SESSION_COOKIE}=${session}`, origin: appOrigin() };
  // Development stand-in until browser sessions exist on the service: a key held by this server.
  const devKey = process.env.ACP_DEV_API_KEY;
  return devKey ? { 'x-session-api-key': devKey } : null;
}

/** A tRPC client acting as the signed-in user; sends the browser to /signin otherwise. */
export async function service(): Promise<AppClient> {
  const headers = await serviceAuthHeaders();
  if (!headers) redirect('/signin');
  return createClient({ url: `${serviceUrl()}/trpc`, headers });
}

/** Runs a server-side read; an expired or revoked session sends the browser to sign in again. */
export async function read<T>(call: (trpc: AppClient) => Promise<T>): Promise<T> {
  const trpc = await service();
  try {
    return await call(trpc);
  } catch (error) {
    if (isAppClientError(error) && error.data?.code === 'UNAUTHORIZED') redirect('/signin');
    throw error;
  }
}
