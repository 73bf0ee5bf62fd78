// Standard Webhooks' signature scheme (https://www.standardwebhooks.com), so existing verifier
// libraries work: the secret is "whsec_" + base64 of random bytes; each delivery attempt is
// signed with HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>", sent as
// "v1,<base64 signature>"; several signatures (a rotation's old and new secret) are separated
// by spaces.
import crypto from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 24;

export function newWebhookSecret(): string {
  return SECRET_PREFIX + crypto.randomBytes(SECRET_BYTES).toString('base64');
}

export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The headers of one attempt (webhook-attempt is ours, not the standard's: which try this is). */
export function signedHeaders(secrets: string[], id: string, body: string, attempt: number, now: Date): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': 'agent-control-plane-webhooks',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => signature(secret, id, timestamp, body)).join(' '),
    'webhook-attempt': String(attempt),
  };
}
