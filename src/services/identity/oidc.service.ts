// OpenID Connect sign-in (docs/oidc.md): the authorization code flow with PKCE against the
// provider OIDC_ISSUER names, through openid-client (a certified relying party). A sign-in
// begins with a sealed cookie holding its state, nonce and PKCE verifier (any replica can
// finish it); it ends with a browser session for the user the ID token names — their verified
// email address is their user id here — when the provider vouches for them and they are in an
// allowed domain or group. The first sign-in is the user's creation: nothing else is needed.
import * as oidc from 'openid-client';
import type { Config } from '../../config/config.js';
import type { SecretBox } from '../../crypto.js';
import { AppError, isDuplicateKeyError } from '../../errors.js';
import type { UserRoleModel } from '../../../models/index.js';
import type { Logger } from '../../logger.js';
import { USER_ID_PATTERN } from './api-keys.service.js';
import type { OpenedSession, SessionsService } from './sessions.service.js';

export const OIDC_COOKIE = 'acp_oidc';
/** How long a sign-in may take at the provider. */
const LOGIN_TTL_MS = 10 * 60_000;
/** How long the provider's discovery document is trusted before it is read again. */
const DISCOVERY_TTL_MS = 60 * 60_000;
const COOKIE_CONTEXT = 'oidc-login';

interface Login {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
  expiresAt: number;
}

type OidcSettings = NonNullable<Config['oidc']>;

const FIRST_RUN_MARKER = '#first-run-admin';

export class OidcService {
  private discovered: { config: oidc.Configuration; at: number } | null = null;

  constructor(
    private readonly settings: OidcSettings,
    private readonly box: SecretBox,
    private readonly sessions: SessionsService,
    private readonly roles: UserRoleModel,
    private readonly log: Logger,
    private readonly hooks: {
      /** No administrator named for this provider's users: the first one to sign in becomes one. */
      firstRunAdmin: boolean;
      /** After admission, before the session: joins the organisations that invited this email. */
      signedIn(userId: string): Promise<unknown>;
    } = { firstRunAdmin: false, signedIn: async () => {} },
  ) {}

  get buttonLabel(): string {
    return this.settings.buttonLabel;
  }

  /** Where to send the browser, and the cookie that lets the callback finish this sign-in. */
  async begin(redirectUri: string, next: string): Promise<{ url: string; cookie: string }> {
    const config = await this.provider();
    const login: Login = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      next,
      expiresAt: Date.now() + LOGIN_TTL_MS,
    };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.settings.scopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(login.verifier),
      code_challenge_method: 'S256',
      state: login.state,
      nonce: login.nonce,
    });
    return { url: url.href, cookie: this.box.encrypt(JSON.stringify(login), COOKIE_CONTEXT) };
  }

  /** The provider's RP-initiated logout URL coming back to `postLogout`; null when the provider has none. */
  async endSessionUrl(postLogout: string): Promise<string | null> {
    const config = await this.provider();
    if (!config.serverMetadata().end_session_endpoint) return null;
    return oidc.buildEndSessionUrl(config, { client_id: this.settings.clientId, post_logout_redirect_uri: postLogout }).href;
  }

  /**
   * Finishes a sign-in at the callback: the code exchanged (with the PKCE verifier), the ID
   * token checked (signature, issuer, audience, expiry, nonce), the user admitted or refused.
   */
  async finish(callbackUrl: URL, cookie: string | undefined, replacing?: string): Promise<OpenedSession & { next: string }> {
    const login = this.openCookie(cookie);
    const config = await this.provider();
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: login.verifier,
        expectedState: login.state,
        expectedNonce: login.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (error) {
      // The provider's own words may echo what was sent: logged by kind, not shown.
      this.log.warn({ err: { name: (error as Error).name, code: (error as { code?: string }).code } }, 'OIDC sign-in refused');
      throw new AppError('UNAUTHORIZED', 'The identity provider did not confirm this sign-in', { reason: 'oidc_refused' });
    }
    const { userId, admin } = this.admitted(claims!);
    // The role as the provider states it now: a person taken out of the group loses it here.
    if (this.settings.adminGroups.length > 0) {
      await this.roles.updateOne({ _id: userId }, { $set: { admin, updatedAt: new Date() } }, { upsert: true });
    } else if (this.hooks.firstRunAdmin && (await this.claimFirstRun(userId))) {
      this.log.info({ userId }, 'OIDC: the first user to sign in is an administrator');
    }
    await this.hooks.signedIn(userId);
    const opened = await this.sessions.openForIdentity(userId, replacing);
    return { ...opened, next: login.next };
  }

  /**
   * Once per database: a marker no user id can take ('#' is in none) is inserted, and only the
   * sign-in whose insert wins makes its user an administrator (two first sign-ins at once: one).
   */
  private async claimFirstRun(userId: string): Promise<boolean> {
    try {
      await this.roles.create({ _id: FIRST_RUN_MARKER, admin: false, updatedAt: new Date() });
    } catch (error) {
      if (isDuplicateKeyError(error)) return false;
      throw error;
    }
    try {
      await this.roles.updateOne({ _id: userId }, { $set: { admin: true, updatedAt: new Date() } }, { upsert: true });
    } catch (error) {
      await this.roles.deleteOne({ _id: FIRST_RUN_MARKER }).catch(() => {}); // the next sign-in tries again
      throw error;
    }
    return true;
  }

  /** The user id of the ID token's person and whether they are an administrator; FORBIDDEN when they may not sign in here. */
  private admitted(claims: oidc.IDToken): { userId: string; admin: boolean } {
    const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : null;
    if (!email || claims.email_verified === false || !USER_ID_PATTERN.test(email)) {
      throw new AppError('FORBIDDEN', 'The identity provider gave no verified email address for this account', {
        reason: 'oidc_not_allowed',
      });
    }
    const { allowedDomains, allowedGroups, adminGroups, groupsClaim } = this.settings;
    const domainOk = allowedDomains.length === 0 || allowedDomains.includes(email.slice(email.lastIndexOf('@') + 1));
    const claimed = claims[groupsClaim];
    const groups = Array.isArray(claimed) ? claimed.map(String) : [];
    const groupOk = allowedGroups.length === 0 || groups.some((g) => allowedGroups.includes(g));
    if (!domainOk || !groupOk) {
      throw new AppError('FORBIDDEN', `${email} may not sign in to this service`, { reason: 'oidc_not_allowed' });
    }
    return { userId: email, admin: groups.some((g) => adminGroups.includes(g)) };
  }

  private openCookie(cookie: string | undefined): Login {
    let login: Login | null = null;
    try {
      login = cookie ? (JSON.parse(this.box.decrypt(decodeURIComponent(cookie), COOKIE_CONTEXT)) as Login) : null;
    } catch {
      login = null;
    }
    if (!login || login.expiresAt < Date.now()) {
      throw new AppError('UNAUTHORIZED', 'This sign-in expired or began in another browser: sign in again', { reason: 'oidc_refused' });
    }
    return login;
  }

  /** The provider's configuration from its discovery document (plain http only on loopback: tests, a local provider). */
  private async provider(): Promise<oidc.Configuration> {
    if (this.discovered && Date.now() - this.discovered.at < DISCOVERY_TTL_MS) return this.discovered.config;
    const issuer = new URL(this.settings.issuer);
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname);
    try {
      const config = await oidc.discovery(
        issuer,
        this.settings.clientId,
        this.settings.clientSecret ?? undefined,
        this.settings.clientSecret ? oidc.ClientSecretPost(this.settings.clientSecret) : oidc.None(),
        loopback ? { execute: [oidc.allowInsecureRequests], timeout: 10 } : { timeout: 10 },
      );
      this.discovered = { config, at: Date.now() };
      return config;
    } catch (error) {
      this.log.warn(
        { err: { name: (error as Error).name, code: (error as { code?: string }).code }, issuer: issuer.origin },
        'OIDC discovery failed',
      );
      throw new AppError('BAD_GATEWAY', 'The identity provider cannot be reached', { reason: 'oidc_provider_unreachable' });
    }
  }
}
