// Provider hosts, microagent parsing and the call limiter, without a network.
import { describe, expect, it } from 'vitest';
import { publicUrlSegments } from '../../src/git/providers/provider-client.js';
import { Limiter } from '../../src/git/providers/limiter.js';
import { isMicroagentFile, microagentsDir, parseMicroagent, withoutDomain } from '../../src/git/providers/microagents.js';
import { providerApiBase, providerGraphqlUrl } from '../../src/git/providers/provider-api.js';

const roots = {
  githubApiUrl: 'https://api.github.com',
  gitlabApiUrl: 'https://gitlab.com/api/v4',
  bitbucketApiUrl: 'https://api.bitbucket.org/2.0',
};

describe('provider hosts', () => {
  it.each([
    ['github', null, 'https://api.github.com', 'https://api.github.com/graphql'],
    ['github', 'github.com', 'https://api.github.com', 'https://api.github.com/graphql'],
    ['github', 'ghe.example.com', 'https://ghe.example.com/api/v3', 'https://ghe.example.com/api/graphql'],
    ['github', 'http://ghe.internal:8080/', 'http://ghe.internal:8080/api/v3', 'http://ghe.internal:8080/api/graphql'],
    ['gitlab', null, 'https://gitlab.com/api/v4', 'https://gitlab.com/api/graphql'],
    ['gitlab', 'git.example.com', 'https://git.example.com/api/v4', 'https://git.example.com/api/graphql'],
  ] as const)('%s at %s: REST %s, GraphQL %s', (provider, host, rest, graphql) => {
    expect(providerApiBase(provider, host, roots)).toBe(rest);
    expect(providerGraphqlUrl(provider, host, roots)).toBe(graphql);
  });

  it('puts a Bitbucket-style host on its api. subdomain, and has no API for enterprise_sso', () => {
    expect(providerApiBase('bitbucket', null, roots)).toBe('https://api.bitbucket.org/2.0');
    expect(providerApiBase('bitbucket', 'bitbucket.example.com', roots)).toBe('https://api.bitbucket.example.com/2.0');
    expect(providerApiBase('bitbucket', 'http://bb.internal:7990', roots)).toBe('http://api.bb.internal:7990/2.0');
    expect(providerApiBase('enterprise_sso', null, roots)).toBeNull();
  });

  it('reads public URLs of the provider (or its host)', () => {
    expect(publicUrlSegments('https://github.com/acme/widgets/tree/main', ['github.com'])).toEqual(['acme', 'widgets', 'tree', 'main']);
    expect(publicUrlSegments('https://evil.example/acme/widgets', ['github.com'])).toBeNull();
    expect(publicUrlSegments('acme/widgets', ['github.com'])).toBeNull();
  });
});

describe('microagents', () => {
  it('finds them in .openhands/microagents, or microagents/ of a config repository', () => {
    expect(microagentsDir('acme/widgets')).toBe('.openhands/microagents');
    expect(microagentsDir('acme/.openhands')).toBe('microagents');
    expect(microagentsDir('acme/openhands-config')).toBe('microagents');
    expect(withoutDomain('github.com/acme/widgets')).toBe('acme/widgets');
    expect(withoutDomain('group/sub/repo')).toBe('group/sub/repo');
    expect(isMicroagentFile({ name: 'a.md', path: 'x/a.md' })).toBe(true);
    expect(isMicroagentFile({ name: 'README.md', path: 'x/README.md' })).toBe(false);
    expect(isMicroagentFile({ name: 'a.txt', path: 'x/a.txt' })).toBe(false);
  });

  it('parses front matter triggers and strips it from the body', () => {
    expect(parseMicroagent('---\nname: x\ntriggers: [a, b, 3]\n---\nBody\n')).toEqual({ content: 'Body\n', triggers: ['a', 'b'] });
    expect(parseMicroagent('No front matter')).toEqual({ content: 'No front matter', triggers: [] });
    expect(parseMicroagent('---\n: : bad yaml [\n---\nStill read')).toEqual({ content: 'Still read', triggers: [] });
  });
});

describe('Limiter', () => {
  it('holds at most max, serves waiters in order, and drops a waiter whose signal aborts', async () => {
    const limiter = new Limiter(1);
    const never = new AbortController().signal;
    const first = await limiter.acquire(never);
    const order: string[] = [];
    const aborting = new AbortController();
    const second = limiter.acquire(aborting.signal).then((release) => (order.push('second'), release));
    const third = limiter.acquire(never).then((release) => (order.push('third'), release));
    aborting.abort(new Error('gave up'));
    await expect(second).rejects.toThrow('gave up');
    expect(limiter.queued).toBe(1);
    first();
    (await third)();
    expect(order).toEqual(['third']);
    expect(limiter.queued).toBe(0);
    const again = await limiter.acquire(never); // the slot came back
    again();
  });
});
