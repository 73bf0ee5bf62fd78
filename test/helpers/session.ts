// Browser sign-in for tests: POST /api/auth/session with a key, and the cookie it set.
import { call } from './app.js';

export interface SignedIn {
  /** "acp_session=<id>", ready for a Cookie header. */
  cookie: string;
  sessionId: string;
  setCookie: string;
  body: { user_id: string; expires_at: string };
}

export async function signIn(app: { url: string }, apiKey: string, headers: Record<string, string> = {}): Promise<SignedIn> {
  const res = await call(app, 'POST', '/api/auth/session', { body: { api_key: apiKey }, headers });
  if (res.status !== 200) throw new Error(`sign-in answered ${res.status}: ${res.text}`);
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('acp_session='));
  if (!setCookie) throw new Error('sign-in set no acp_session cookie');
  const sessionId = setCookie.slice('acp_session='.length).split(';')[0]!;
  return { cookie: `acp_session=${sessionId}`, sessionId, setCookie, body: res.body };
}
