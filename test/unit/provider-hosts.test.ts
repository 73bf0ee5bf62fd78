// The git provider host rules (src/git/providers/provider-hosts.ts), without a network: which
// addresses an unlisted host may reach, what GIT_PROVIDER_HOSTS entries allow, which URLs a
// call may go to, and the lookup that checks addresses at connection time (DNS rebinding).
import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { AddressRefusedError, ProviderHostPolicy } from '../../src/git/providers/provider-hosts.js';

const ROOTS = ['https://api.github.com', 'https://gitlab.com/api/v4', 'http://127.0.0.1:4000/2.0'];
const policy = (...entries: string[]) => new ProviderHostPolicy(entries, ROOTS);

describe('addresses of unlisted hosts (the default "*")', () => {
  const open = policy();
  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '0.0.0.0',
    '10.1.2.3',
    '172.31.255.255',
    '192.168.0.1',
    '100.64.0.1',
    '100.100.100.200',
    '169.254.169.254',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::7f00:1',
    'fd00:ec2::254',
    'fc00::1',
    'fe80::1',
    'ff02::1',
  ])('refuses %s', (address) => expect(open.addressAllowed(address)).toBe(false));

  it.each(['8.8.8.8', '140.82.112.3', '2606:4700:4700::1111'])('allows the public %s', (address) =>
    expect(open.addressAllowed(address)).toBe(true),
  );

  it('allows a listed network, and only public addresses besides when "*" is listed too', () => {
    const inside = policy('10.0.0.0/8');
    expect(inside.addressAllowed('10.9.8.7')).toBe(true);
    expect(inside.addressAllowed('::ffff:10.9.8.7')).toBe(true);
    expect(inside.addressAllowed('8.8.8.8')).toBe(false);
    expect(inside.addressAllowed('127.0.0.1')).toBe(false);
    expect(policy('*', '10.0.0.0/8').addressAllowed('8.8.8.8')).toBe(true);
  });
});

describe('names users may give', () => {
  it('takes any origin by default (its addresses are checked at the call), never more than an origin', () => {
    const open = policy();
    expect(open.hostAllowed('git.example.com')).toBe(true);
    expect(open.hostAllowed('https://git.example.com:8443/')).toBe(true);
    expect(open.hostAllowed('localhost')).toBe(true); // a name: refused by its address (below)
    expect(open.hostAllowed('127.0.0.1')).toBe(false); // an address: refused at once
    expect(open.hostAllowed('http://[::1]:80')).toBe(false);
    expect(open.hostAllowed('git.example.com/api')).toBe(false);
    expect(open.hostAllowed('https://git.example.com?x')).toBe(false);
  });

  it('takes only listed hosts (any port, or the listed one) when the list has no "*"', () => {
    const listed = policy('ghe.internal', 'gitlab.internal:8443', '127.0.0.1');
    expect(listed.hostAllowed('ghe.internal')).toBe(true);
    expect(listed.hostAllowed('http://ghe.internal:8080')).toBe(true);
    expect(listed.hostAllowed('gitlab.internal:8443')).toBe(true);
    expect(listed.hostAllowed('gitlab.internal')).toBe(false); // port 443
    expect(listed.hostAllowed('http://127.0.0.1:3000')).toBe(true);
    expect(listed.hostAllowed('git.example.com')).toBe(false);
    expect(policy('*', 'ghe.internal').hostAllowed('git.example.com')).toBe(true);
  });

  it('refuses an entry that is no host, network or "*" at start (config check and policy alike)', () => {
    expect(() => policy('http://x/y')).toThrow(/GIT_PROVIDER_HOSTS/);
    expect(() => loadConfig({ GIT_PROVIDER_HOSTS: 'ok.example.com, a/b/c' })).toThrow(/GIT_PROVIDER_HOSTS/);
    expect(loadConfig({ GIT_PROVIDER_HOSTS: '*, ghe.internal:8443, 10.0.0.0/8, [fd00::1]' }).providers.allowedHosts).toHaveLength(4);
  });
});

describe('where a call may go', () => {
  const open = policy();
  it('trusts the configured roots, wherever they are', () => {
    expect(open.decide('http://127.0.0.1:4000/2.0/user', null)).toEqual({ reach: 'any', userNamed: false });
    expect(open.decide('https://api.github.com/user', null)).toEqual({ reach: 'any', userNamed: false });
  });

  it("sends a user's call only to the host they named (or its api. subdomain), with its scheme and port", () => {
    expect(open.decide('https://ghe.example.com/api/v3/user', 'ghe.example.com')).toEqual({ reach: 'checked', userNamed: true });
    expect(open.decide('https://api.bb.example.com/2.0/user', 'bb.example.com')).toEqual({ reach: 'checked', userNamed: true });
    expect(open.decide('https://elsewhere.example.com/user', 'ghe.example.com')).toBeNull();
    expect(open.decide('http://ghe.example.com/api/v3/user', 'ghe.example.com')).toBeNull();
    expect(open.decide('https://ghe.example.com:444/api/v3/user', 'ghe.example.com')).toBeNull();
    expect(open.decide('https://elsewhere.example.com/user', null)).toBeNull();
    expect(open.decide('https://ghe.example.com/x/api/v3/user', 'ghe.example.com/x')).toBeNull(); // stored before origins only
    expect(open.decide('file:///etc/passwd', 'ghe.example.com')).toBeNull();
  });

  it('lets a listed host reach any address, and checks the address of an IP literal at once', () => {
    expect(policy('127.0.0.1').decide('http://127.0.0.1:3000/api/v3/user', 'http://127.0.0.1:3000')).toEqual({
      reach: 'any',
      userNamed: true,
    });
    expect(policy('*', '10.0.0.0/8').decide('https://10.1.1.1/api/v3/user', '10.1.1.1')).toEqual({ reach: 'checked', userNamed: true });
    expect(policy('*', '10.0.0.0/8').decide('https://10.1.1.1/api/v3/user', '10.1.1.1:443')).toEqual({ reach: 'checked', userNamed: true });
  });
});

describe('the connection lookup (DNS rebinding)', () => {
  const lookup = (p: ProviderHostPolicy, hostname: string, all: boolean) =>
    new Promise<{ error: Error | null; result: string | LookupAddress[] }>((resolve) =>
      p.lookup(hostname, { all }, (error, result) => resolve({ error, result })),
    );

  it('refuses a name allowed as a name once it resolves to a loopback address, in both lookup forms', async () => {
    const open = policy();
    expect(open.hostAllowed('localhost')).toBe(true);
    for (const all of [false, true]) {
      const { error } = await lookup(open, 'localhost', all);
      expect(error).toBeInstanceOf(AddressRefusedError);
    }
  });

  it('hands the connection the checked addresses when they are allowed', async () => {
    const loopbackAllowed = policy('127.0.0.0/8', '::1/128');
    const single = await lookup(loopbackAllowed, 'localhost', false);
    expect(single.error).toBeNull();
    expect(single.result).toMatch(/^(127\.|::1$)/);
    const all = await lookup(loopbackAllowed, 'localhost', true);
    expect(all.error).toBeNull();
    expect((all.result as LookupAddress[]).length).toBeGreaterThan(0);
  });
});
