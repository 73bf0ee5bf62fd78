import { describe, expect, it } from 'vitest';
import { VerifiedCache } from '../../src/services/identity/verified-cache.js';

function setup(ttlMs = 1000, maxEntries?: number) {
  const clock = { now: 0 };
  const cache = new VerifiedCache<{ user: string }>({ ttlMs, now: () => clock.now, ...(maxEntries ? { maxEntries } : {}) });
  const lookups: string[] = [];
  const verify = (credential: string, user: string | null) => () => {
    lookups.push(credential);
    return Promise.resolve(user ? { user } : null);
  };
  return { clock, cache, lookups, verify };
}

describe('VerifiedCache', () => {
  it('looks a credential up once per TTL, measured from when the lookup started', async () => {
    const { clock, cache, lookups, verify } = setup();
    expect(await cache.get('k1', verify('k1', 'alice'))).toEqual({ user: 'alice' });
    clock.now = 999;
    expect(await cache.get('k1', verify('k1', 'alice'))).toEqual({ user: 'alice' });
    expect(lookups).toEqual(['k1']);
    clock.now = 1000;
    await cache.get('k1', verify('k1', 'alice'));
    expect(lookups).toEqual(['k1', 'k1']);
  });

  it('keeps credentials apart: another credential never gets a remembered value', async () => {
    const { cache, lookups, verify } = setup();
    await cache.get('alice-key', verify('alice-key', 'alice'));
    expect(await cache.get('bob-key', verify('bob-key', 'bob'))).toEqual({ user: 'bob' });
    expect(await cache.get('alice-key-altered', verify('alice-key-altered', null))).toBeNull();
    expect(lookups).toEqual(['alice-key', 'bob-key', 'alice-key-altered']);
  });

  it('does not remember a failed verification', async () => {
    const { cache, lookups, verify } = setup();
    expect(await cache.get('k', verify('k', null))).toBeNull();
    expect(await cache.get('k', verify('k', 'alice'))).toEqual({ user: 'alice' });
    expect(lookups).toEqual(['k', 'k']);
  });

  it('makes one lookup for a burst of requests with a new credential', async () => {
    const { cache, lookups, verify } = setup();
    const answers = await Promise.all(Array.from({ length: 10 }, () => cache.get('k', verify('k', 'alice'))));
    expect(answers.every((a) => a?.user === 'alice')).toBe(true);
    expect(lookups).toEqual(['k']);
  });

  it('forgets matching entries at once, and a lookup running across forget() is not remembered', async () => {
    const { cache, lookups, verify } = setup();
    await cache.get('k', verify('k', 'alice'));
    cache.forget((v) => v.user === 'alice');
    let release!: () => void;
    const slow = cache.get('k', () => {
      lookups.push('slow');
      return new Promise((resolve) => (release = () => resolve({ user: 'alice' })));
    });
    cache.forget((v) => v.user === 'alice'); // revoked while that lookup runs
    release();
    await slow;
    await cache.get('k', verify('k', null));
    expect(lookups).toEqual(['k', 'slow', 'k']);
  });

  it('drops the oldest entries beyond its size', async () => {
    const { cache, lookups, verify } = setup(1000, 2);
    for (const k of ['a', 'b', 'c']) await cache.get(k, verify(k, k));
    expect(cache.size).toBe(2);
    await cache.get('a', verify('a', 'a'));
    expect(lookups).toEqual(['a', 'b', 'c', 'a']);
  });

  it('with a TTL of 0 looks up every time', async () => {
    const { cache, lookups, verify } = setup(0);
    await cache.get('k', verify('k', 'alice'));
    await cache.get('k', verify('k', 'alice'));
    expect(lookups).toEqual(['k', 'k']);
  });
});
