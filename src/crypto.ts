// Encryption at rest for every stored secret (AES-256-GCM) and hashing of API keys.
//
// Ciphertext format: "enc:v1:<keyId>:<base64(iv | tag | ciphertext)>". The key id (first
// 8 hex chars of SHA-256 of the key) lets old ciphertexts be decrypted with a previous key
// during rotation. The associated data binds a ciphertext to its owner and field, so a
// value copied into another user's document does not decrypt.
import crypto from 'node:crypto';
import { parseKey } from './config/config-values.js';

export { parseKey };

const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretBox {
  private readonly current: { id: string; key: Buffer };
  private readonly byId: Map<string, Buffer>;

  constructor(currentKey: Buffer, previousKeys: Buffer[] = []) {
    this.current = { id: keyId(currentKey), key: currentKey };
    this.byId = new Map([currentKey, ...previousKeys].map((k) => [keyId(k), k]));
  }

  static fromStrings(current: string, previous: string[] = []): SecretBox {
    return new SecretBox(parseKey(current), previous.map(parseKey));
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  encrypt(plaintext: string, context: string): string {
    const iv = crypto.randomBytes(IV_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const blob = Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
    return `${PREFIX}${this.current.id}:${blob}`;
  }

  decrypt(value: string, context: string): string {
    if (!value.startsWith(PREFIX)) throw new Error('value is not an encrypted secret');
    const rest = value.slice(PREFIX.length);
    const sep = rest.indexOf(':');
    const key = this.byId.get(rest.slice(0, sep));
    if (sep < 0 || !key) throw new Error('secret was encrypted with an unknown key');
    const raw = Buffer.from(rest.slice(sep + 1), 'base64');
    const decipher = crypto.createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }

  /** A key for another purpose (e.g. signing), derived from the current encryption key. */
  deriveKey(purpose: string): Buffer {
    return crypto.createHmac('sha256', this.current.key).update(`agent-control-plane:${purpose}`).digest();
  }

  /** True when the value is already under the current key (rotation skips it). */
  isCurrent(value: string): boolean {
    return value.startsWith(`${PREFIX}${this.current.id}:`);
  }
}

export function generateKeyText(): string {
  return crypto.randomBytes(32).toString('base64');
}

function keyId(key: Buffer): string {
  return crypto.createHash('sha256').update(key).digest('hex').slice(0, 8);
}

export function sha256(text: string): Buffer {
  return crypto.hash('sha256', text, 'buffer'); // one-shot: no Hash object per call
}

/** Constant-time comparison of two secrets of any length (hashing equalises the lengths). */
export function secretsEqual(a: string, b: string): boolean {
  return crypto.timingSafeEqual(sha256(a), sha256(b));
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random string over [0-9A-Za-z] without modulo bias. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of crypto.randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}
