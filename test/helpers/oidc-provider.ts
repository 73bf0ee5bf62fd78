// A real OpenID provider for the sign-in tests: oidc-provider (npm, OpenID-certified) on
// 127.0.0.1, with its development login and consent pages, one public client using PKCE, and
// the accounts a test gives (any password). `signIn` walks a browser's way through it with
// plain HTTP and a cookie jar: the service's login, the provider's pages, back to the service.
import http from 'node:http';
import Provider from 'oidc-provider';

export interface Account {
  email: string;
  email_verified?: boolean;
  groups?: string[];
}

export interface TestProvider {
  issuer: string;
  close(): Promise<void>;
}

/**
 * Starts the provider on `port` for a client whose callback is `redirectUri`. `host`: the name
 * its issuer uses (localhost makes it another site than a service on 127.0.0.1, as a real
 * provider is, for a browser's SameSite rules).
 */
export async function startOidcProvider(
  port: number,
  redirectUri: string,
  accounts: Record<string, Account>,
  host = '127.0.0.1',
): Promise<TestProvider> {
  const issuer = `http://${host}:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'acp-test',
        token_endpoint_auth_method: 'none',
        redirect_uris: [redirectUri],
        // Where its RP-initiated logout may come back to: the service's sign-in page.
        post_logout_redirect_uris: [new URL('/signin', redirectUri).href],
        response_types: ['code'],
        grant_types: ['authorization_code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['groups'] },
    // The scopes' claims in the ID token itself (what the service reads), not only at userinfo.
    conformIdTokenClaims: false,
    cookies: { keys: ['oidc-provider-test-cookie-key'] },
    async findAccount(_ctx, id) {
      const account = accounts[id];
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
  });
  const server = http.createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    issuer,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A browser's cookies, by host:port. */
class CookieJar {
  private readonly jars = new Map<string, Map<string, string>>();
  header(url: URL): string {
    return [...(this.jars.get(url.host) ?? new Map<string, string>())].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  store(url: URL, response: Response): void {
    const jar = this.jars.get(url.host) ?? new Map<string, string>();
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const eq = pair!.indexOf('=');
      const [name, value] = [pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim()];
      if (/max-age=0/i.test(cookie) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    this.jars.set(url.host, jar);
  }
  get(url: string, name: string): string | undefined {
    return this.jars.get(new URL(url).host)?.get(name);
  }
}

export interface SignInWalk {
  /** The service's answer at its callback (or wherever the walk stopped). */
  final: { status: number; text: string; url: string };
  jar: CookieJar;
}

/**
 * Signs in as the provider's account `login` from the service's /oauth/oidc/login, following
 * redirects and submitting the provider's login and consent forms as a browser would.
 */
export async function signIn(serviceUrl: string, login: string, next = '/'): Promise<SignInWalk> {
  const jar = new CookieJar();
  let url = new URL(`${serviceUrl}/oauth/oidc/login?next=${encodeURIComponent(next)}`);
  let method = 'GET';
  let body: string | undefined;
  for (let step = 0; step < 20; step++) {
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      headers: { cookie: jar.header(url), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(body ? { body } : {}),
    });
    jar.store(url, response);
    const location = response.headers.get('location');
    if (location && response.status >= 300 && response.status < 400) {
      url = new URL(location, url);
      method = 'GET';
      body = undefined;
      continue;
    }
    const text = await response.text();
    // The provider's development pages: its login form, then its consent form.
    if (url.pathname.startsWith('/interaction/') && response.status === 200) {
      const prompt = /name="prompt" value="(\w+)"/.exec(text)?.[1] ?? (text.includes('name="login"') ? 'login' : 'consent');
      method = 'POST';
      body = new URLSearchParams(prompt === 'login' ? { prompt, login, password: 'any' } : { prompt }).toString();
      continue;
    }
    return { final: { status: response.status, text, url: url.href }, jar };
  }
  throw new Error('the sign-in walk did not end');
}
