// Where the service is and how this app appears to browsers. Read at request time on the
// server, so one build runs against any service.
import 'server-only';

/** The agent-control-plane service (REST and tRPC), as this server reaches it. */
export function serviceUrl(): string {
  return (process.env.ACP_SERVICE_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
}

/**
 * This app's origin as browsers see it. Sent as Origin on the server's own calls, so the
 * service (which lists it in TRUSTED_ORIGINS) accepts them as coming from this app.
 */
export function appOrigin(): string {
  return (process.env.APP_ORIGIN ?? 'http://localhost:3001').replace(/\/$/, '');
}

/** Name of the session cookie, on the service and on this app alike. */
export const SESSION_COOKIE = 'acp_session';
