// Which hosts a provider call may reach (SSRF guard). The API roots the operator configured
// (GITHUB_API_URL, GITLAB_API_URL, BITBUCKET_API_URL) are trusted as they are. A host a user
// names with a token is an origin only (contract: providerHostOrigin) and is checked at every
// call, so tokens stored before a rule changed obey the current rules:
// - listed in GIT_PROVIDER_HOSTS by name (host or host:port): allowed, at whatever address it
//   resolves to (the operator vouches for it: a self-hosted GitLab on 10.0.0.5 is normal);
// - otherwise every address it resolves to must be public ("*", the default) or inside a
//   network listed as CIDR ("10.0.0.0/8"); loopback, private, link-local, CGNAT, ULA,
//   metadata and other special addresses are refused.
// The address check runs in the lookup of the connection itself, so a name that resolved to a
// public address for one request and to 127.0.0.1 for the next (DNS rebinding) is refused.
import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import { providerHostOrigin } from '../../../contract/git-providers.schema.js';
import type { Config } from '../../config/config.js';

/** Special-purpose addresses (IANA registries): never reachable through an unlisted host unless allowed. */
const SPECIAL = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT (Alibaba's metadata service is 100.100.100.200)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, the cloud metadata service 169.254.169.254
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  SPECIAL.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  // IPv4-mapped addresses (::ffff:a.b.c.d) need no rule: BlockList matches them against the IPv4 rules.
  ['::', 96], // unspecified, loopback, IPv4-compatible
  ['64:ff9b::', 96], // NAT64
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32], // Teredo
  ['2001:db8::', 32],
  ['2002::', 16], // 6to4
  ['fc00::', 7], // unique local (AWS's metadata service is fd00:ec2::254)
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  SPECIAL.addSubnet(network, prefix, 'ipv6');

/** How a call may connect: 'any' address (trusted root or listed host), or every address 'checked'. */
export type Reach = 'any' | 'checked';

export interface ReachDecision {
  reach: Reach;
  /** The host came from a user (not a configured root): failures read alike, whatever the cause. */
  userNamed: boolean;
}

/** Thrown by the guarded lookup: the name resolved to an address the rules refuse. */
export class AddressRefusedError extends Error {
  constructor() {
    super('address not allowed for git provider calls');
    this.name = 'AddressRefusedError';
  }
}

const family = (address: string) => (net.isIP(address) === 6 ? 'ipv6' : 'ipv4');
const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');
const defaultPort = (url: URL) => url.port || (url.protocol === 'https:' ? '443' : '80');

export class ProviderHostPolicy {
  private readonly names = new Set<string>();
  private readonly networks = new net.BlockList();
  private readonly anyPublic: boolean;
  private readonly trustedOrigins: Set<string>;

  /**
   * entries: GIT_PROVIDER_HOSTS split at commas ("*", "host", "host:port", "network/prefix");
   * none means "*". trustedRoots: the configured API roots.
   */
  constructor(entries: readonly string[], trustedRoots: readonly string[]) {
    this.anyPublic = entries.length === 0 || entries.includes('*');
    for (const entry of entries) {
      if (entry === '*') continue;
      const cidr = /^([0-9a-f:.]+)\/(\d{1,3})$/i.exec(entry);
      if (cidr && net.isIP(cidr[1]!)) {
        this.networks.addSubnet(cidr[1]!, Number(cidr[2]), family(cidr[1]!));
        continue;
      }
      const hostPort = /^(\[[0-9a-f:.]+\]|[^:/[\]]+)(?::(\d{1,5}))?$/i.exec(entry);
      if (!hostPort) throw new Error(`GIT_PROVIDER_HOSTS: "${entry}" is not a host, host:port, network/prefix or *`);
      const hostname = new URL(`http://${hostPort[1]}`).hostname;
      this.names.add(hostPort[2] ? `${hostname}:${hostPort[2]}` : hostname);
    }
    this.trustedOrigins = new Set(trustedRoots.map((root) => new URL(root).origin));
  }

  /** Whether a user may name this host at all (before any request); false for non-origins too. */
  hostAllowed(host: string): boolean {
    const origin = providerHostOrigin(host);
    if (!origin) return false;
    const url = new URL(origin);
    if (this.listed(url)) return true;
    const ip = bare(url.hostname);
    if (net.isIP(ip)) return this.addressAllowed(ip);
    return this.anyPublic || this.hasNetworks();
  }

  /**
   * How a call to `url` may connect, or null when it may not be made. `namedHost` is the host
   * the user stored with the token (null: the configured root); the URL must be on that host
   * (or, for Bitbucket-style hosts, its "api." subdomain) with its scheme and port.
   */
  decide(url: string, namedHost: string | null): ReachDecision | null {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return null;
    }
    if (target.protocol !== 'https:' && target.protocol !== 'http:') return null;
    if (target.username || target.password) return null;
    if (this.trustedOrigins.has(target.origin)) return { reach: 'any', userNamed: false };
    const origin = namedHost === null ? null : providerHostOrigin(namedHost);
    if (!origin || !this.hostAllowed(origin)) return null;
    const named = new URL(origin);
    const sameHost = target.hostname === named.hostname || target.hostname === `api.${named.hostname}`;
    if (!sameHost || target.protocol !== named.protocol || target.port !== named.port) return null;
    if (this.listed(named)) return { reach: 'any', userNamed: true };
    // A connection to an IP literal does no lookup: its address is checked here instead.
    const ip = bare(target.hostname);
    if (net.isIP(ip) && !this.addressAllowed(ip)) return null;
    return { reach: 'checked', userNamed: true };
  }

  /** Whether a connection through an unlisted host may go to this address. */
  addressAllowed(address: string): boolean {
    const type = family(address);
    if (this.networks.check(address, type)) return true;
    return this.anyPublic && !SPECIAL.check(address, type);
  }

  /** dns.lookup, with every address checked: a name with any refused address is refused whole. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', undefined);
      if (addresses.length === 0 || addresses.some((a) => !this.addressAllowed(a.address))) {
        return callback(Object.assign(new AddressRefusedError(), { code: 'EADDRREFUSED' }), '', undefined);
      }
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };

  private listed(url: URL): boolean {
    return this.names.has(url.hostname) || this.names.has(`${url.hostname}:${defaultPort(url)}`);
  }

  private hasNetworks(): boolean {
    return this.networks.rules.length > 0;
  }
}

/** The rules of the configuration: GIT_PROVIDER_HOSTS, with the configured API roots trusted. */
export function providerHostPolicy(providers: Config['providers']): ProviderHostPolicy {
  return new ProviderHostPolicy(providers.allowedHosts, [providers.githubApiUrl, providers.gitlabApiUrl, providers.bitbucketApiUrl]);
}
