// Server-side access to the service, as the signed-in user: the session id travels in the
// service's session cookie, never to browser JavaScript (the cookie on this app is HttpOnly).
import 'server-only';
import { createClient, isAppClientError, type AppClient } from '@agent-control-plane/client';
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { appOrigin, serviceUrl, SESSION_COOKIE } from './config';

/**
 * A tRPC client acting as the signed-in user; sends the browser to /signin otherwise. The
 * service's session cookie authenticates the call, and Origin names this app (listed in the
 * service's TRUSTED_ORIGINS), which the service requires of cookie-authenticated mutations.
 */
export async function service(): Promise<AppClient> {
  const session = (await cookies()).get(SESSION_COOKIE)?.value;
  if (!session) redirect('/signin');
  return createClient({ url: `${serviceUrl()}/trpc`, headers: { cookie: `${SESSION_COOKIE}=${session}`, origin: appOrigin() } });
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
