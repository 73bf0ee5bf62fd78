// Short-lived signed tokens (JWT, HS256) that let an agent fetch the user's current git
// provider token from GET /api/v1/webhooks/secrets without holding a user API key.
import crypto from 'node:crypto';

export interface AccessClaims {
  sub: string; // user id
  provider: string;
  exp: number; // seconds since epoch
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export class AccessTokens {
  constructor(
    private readonly key: Buffer,
    private readonly ttlSeconds: number,
  ) {}

  sign(userId: string, provider: string, now = Date.now()): string {
    const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
    const payload = b64url(JSON.stringify({ sub: userId, provider, exp: Math.floor(now / 1000) + this.ttlSeconds } satisfies AccessClaims));
    return `${header}.${payload}.${this.signature(`${header}.${payload}`)}`;
  }

  /** The claims of a valid, unexpired token; null otherwise. */
  verify(token: string, now = Date.now()): AccessClaims | null {
    const [header, payload, signature] = token.split('.');
    if (!header || !payload || !signature) return null;
    const expected = Buffer.from(this.signature(`${header}.${payload}`));
    const actual = Buffer.from(signature);
    if (expected.length !== actual.length || !crypto.timingSafeEqual(expected, actual)) return null;
    try {
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as AccessClaims;
      return typeof claims.sub === 'string' && typeof claims.provider === 'string' && claims.exp * 1000 > now ? claims : null;
    } catch {
      return null;
    }
  }

  private signature(input: string): string {
    return crypto.createHmac('sha256', this.key).update(input).digest('base64url');
  }
}
