import { describe, expect, it } from 'vitest';
import { generateKeyText, parseKey, randomBase62, SecretBox, secretsEqual } from '../../src/crypto.js';

describe('SecretBox', () => {
  const box = SecretBox.fromStrings(generateKeyText());

  it('round-trips and never repeats a ciphertext', () => {
    const a = box.encrypt('sk-secret', 'ctx');
    const b = box.encrypt('sk-secret', 'ctx');
    expect(a).not.toBe(b);
    expect(a).not.toContain('sk-secret');
    expect(box.decrypt(a, 'ctx')).toBe('sk-secret');
  });

  it('refuses a ciphertext under another context, a tampered one, and an unknown key', () => {
    const sealed = box.encrypt('value', 'settings:alice:llm_api_key');
    expect(() => box.decrypt(sealed, 'settings:bob:llm_api_key')).toThrow();
    const tampered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect(() => box.decrypt(tampered, 'settings:alice:llm_api_key')).toThrow();
    expect(() => SecretBox.fromStrings(generateKeyText()).decrypt(sealed, 'settings:alice:llm_api_key')).toThrow(/unknown key/);
  });

  it('decrypts with a previous key during rotation and knows what is current', () => {
    const oldKey = generateKeyText();
    const newKey = generateKeyText();
    const sealedOld = SecretBox.fromStrings(oldKey).encrypt('v', 'c');
    const rotating = SecretBox.fromStrings(newKey, [oldKey]);
    expect(rotating.decrypt(sealedOld, 'c')).toBe('v');
    expect(rotating.isCurrent(sealedOld)).toBe(false);
    expect(rotating.isCurrent(rotating.encrypt('v', 'c'))).toBe(true);
  });

  it('accepts base64 and hex keys of 32 bytes only', () => {
    expect(parseKey('00'.repeat(32))).toHaveLength(32);
    expect(parseKey(Buffer.alloc(32, 7).toString('base64'))).toHaveLength(32);
    expect(() => parseKey('short')).toThrow(/32 bytes/);
  });
});

describe('helpers', () => {
  it('compares secrets of any length', () => {
    expect(secretsEqual('abc', 'abc')).toBe(true);
    expect(secretsEqual('abc', 'abcd')).toBe(false);
  });
  it('makes base62 strings of the asked length', () => {
    expect(randomBase62(40)).toMatch(/^[0-9A-Za-z]{40}$/);
  });
});
