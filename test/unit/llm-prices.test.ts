// The LLM gateway's price table (src/llm-gateway/prices.ts, usage.ts): LiteLLM-format tables read
// from files and a loopback http server, lookups by the names callers use, costs against the
// brief's verified examples, refreshes that keep the last good table, and the real LiteLLM file
// of the installed agent server's venv.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import {
  costOf,
  createPriceTable,
  litellmPricesIn,
  lookupNames,
  parsePriceEntry,
  type CallUsage,
  type ModelPrice,
  type PriceSources,
} from '../../src/llm-gateway/prices.js';
import { createLogger } from '../../src/logger.js';

const SONNET = {
  input_cost_per_token: 3e-6,
  output_cost_per_token: 15e-6,
  cache_read_input_token_cost: 0.3e-6,
  cache_creation_input_token_cost: 3.75e-6,
  cache_creation_input_token_cost_above_1hr: 6e-6,
  input_cost_per_token_above_200k_tokens: 6e-6,
  output_cost_per_token_above_200k_tokens: 22.5e-6,
  cache_read_input_token_cost_above_200k_tokens: 0.6e-6,
  cache_creation_input_token_cost_above_200k_tokens: 7.5e-6,
  cache_creation_input_token_cost_batches: 1.875e-6,
  litellm_provider: 'anthropic',
  mode: 'chat',
  max_input_tokens: 1_000_000,
  supports_prompt_caching: true,
};

/** A small table in LiteLLM's format, prices as LiteLLM 1.105.7 has them. */
const LITELLM = {
  sample_spec: { input_cost_per_token: 0, output_cost_per_token: 0, litellm_provider: 'one of https://docs.litellm.ai/docs/providers' },
  'gpt-4o': {
    input_cost_per_token: 2.5e-6,
    output_cost_per_token: 1e-5,
    cache_read_input_token_cost: 1.25e-6,
    input_cost_per_token_priority: 4.25e-6,
    litellm_provider: 'openai',
    mode: 'chat',
    max_input_tokens: 128000,
  },
  'claude-sonnet-4-5': SONNET,
  'claude-sonnet-4-5-20250929': SONNET,
  'gpt-5.4': {
    input_cost_per_token: 2.5e-6,
    output_cost_per_token: 15e-6,
    cache_read_input_token_cost: 0.25e-6,
    input_cost_per_token_above_272k_tokens: 5e-6,
    output_cost_per_token_above_272k_tokens: 22.5e-6,
    cache_read_input_token_cost_above_272k_tokens: 0.5e-6,
    input_cost_per_token_above_272k_tokens_priority: 10e-6,
    litellm_provider: 'openai',
    mode: 'responses',
  },
  'openrouter/openai/gpt-4o': { input_cost_per_token: 2.6e-6, output_cost_per_token: 1.1e-5, litellm_provider: 'openrouter', mode: 'chat' },
  'dashscope/qwen-plus': {
    input_cost_per_token: 4e-7,
    output_cost_per_token: 1.2e-6,
    output_cost_per_reasoning_token: 4e-6,
    litellm_provider: 'dashscope',
    mode: 'chat',
  },
  'dall-e-3': { output_cost_per_pixel: 0, litellm_provider: 'openai', mode: 'image_generation' },
  'gpt-4o-transcribe': { input_cost_per_token: 2.5e-6, litellm_provider: 'openai', mode: 'audio_transcription' },
  'text-price-as-string': { input_cost_per_token: '2.5e-6', output_cost_per_token: 1e-5, litellm_provider: 'openai' },
  'negative-price': { input_cost_per_token: -1e-6, output_cost_per_token: 1e-5, litellm_provider: 'openai' },
};
const PRICED_IN_LITELLM = [
  'gpt-4o',
  'claude-sonnet-4-5',
  'claude-sonnet-4-5-20250929',
  'gpt-5.4',
  'openrouter/openai/gpt-4o',
  'dashscope/qwen-plus',
];

// The venv that scripts/setup-agent-server.sh installs for the configured agent server (npm test installs it).
const config = loadConfig({ AGENT_SERVER_VERSION: process.env.AGENT_SERVER_VERSION });
const real = await litellmPricesIn(config.cacheDir, config.sandbox.agentServerVersion);

/** A sum of prices as costOf rounds it: float sums such as 3e-6 * 11 + … end in ...9999998. */
const dollars = (sum: number) => Number(sum.toPrecision(12));

const usage = (u: Partial<CallUsage>): CallUsage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, ...u });

let dir: string;
let counter = 0;
async function file(content: unknown): Promise<string> {
  const f = path.join(dir, `table-${++counter}.json`);
  await writeFile(f, typeof content === 'string' ? content : JSON.stringify(content));
  return f;
}

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: createLogger('debug', sink), text: () => lines.join(''), warnings: () => lines.filter((l) => l.includes('"level":40')) };
}

async function table(sources: Partial<PriceSources>, limits?: { maxBytes: number; timeoutMs: number }) {
  const logs = capture();
  const prices = await createPriceTable({ litellm: null, operator: null, ...sources }, logs.log, limits);
  return { prices, logs };
}

const price = (p: ModelPrice | null): ModelPrice => {
  expect(p).not.toBeNull();
  return p!;
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'llm-prices-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the price table, read from LiteLLM-format files', () => {
  it("reads LiteLLM's table, skipping sample_spec and entries without both an input and an output price", async () => {
    const litellm = await file(LITELLM);
    const { prices } = await table({ litellm });
    const state = prices.describe();
    expect(state).toMatchObject({ litellm: PRICED_IN_LITELLM.length, operator: 0, from: litellm, operatorLoadedAt: null });
    expect(state.loadedAt).toBeInstanceOf(Date);
    expect(state.errors).toEqual({ litellm: null, operator: null });
    for (const model of ['sample_spec', 'dall-e-3', 'gpt-4o-transcribe', 'text-price-as-string', 'negative-price'])
      expect(prices.priceOf(model, 'openai'), model).toBeNull();
    expect(price(prices.priceOf('gpt-4o', 'openai'))).toEqual({
      model: 'gpt-4o',
      source: 'litellm',
      provider: 'openai',
      mode: 'chat',
      rates: { input: 2.5e-6, output: 1e-5, cacheRead: 1.25e-6, cacheWrite: null, cacheWrite1h: null, reasoning: null },
      tiers: [],
    });
  });

  it("prices the brief's verified calls as LiteLLM did: Anthropic $0.0001464, OpenAI gpt-4o $9.375e-5", async () => {
    const { prices } = await table({ litellm: await file(LITELLM) });
    // Anthropic: input 11, cache read 3, cache write 2, output 7 (LiteLLM's prompt_tokens 16).
    const sonnet = price(prices.priceOf('claude-sonnet-4-5-20250929', 'anthropic'));
    expect(prices.cost(sonnet, usage({ input: 11, cacheRead: 3, cacheWrite: 2, output: 7 }))).toBe(0.0001464);
    // OpenAI: prompt_tokens 11 of which cached_tokens 3, completion_tokens 7.
    const gpt4o = price(prices.priceOf('gpt-4o', 'openai'));
    expect(prices.cost(gpt4o, usage({ input: 8, cacheRead: 3, output: 7 }))).toBe(9.375e-5);
  });

  it('bills cache reads and writes at the input price where the entry has no cache price, and reasoning at its own price where it has one', async () => {
    const { prices } = await table({ litellm: await file(LITELLM) });
    const gpt4o = price(prices.priceOf('gpt-4o', 'openai'));
    expect(costOf(gpt4o, usage({ cacheWrite: 1000 }))).toBe(dollars(1000 * 2.5e-6));
    const router = price(prices.priceOf('openrouter/openai/gpt-4o', 'openai'));
    expect(costOf(router, usage({ input: 100, cacheRead: 100 }))).toBe(dollars(200 * 2.6e-6));
    // Reasoning tokens are part of output: at the output price unless the entry prices them apart.
    expect(costOf(gpt4o, usage({ output: 100, reasoning: 60 }))).toBe(costOf(gpt4o, usage({ output: 100 })));
    const qwen = price(prices.priceOf('dashscope/qwen-plus', 'openai'));
    expect(costOf(qwen, usage({ output: 100, reasoning: 60 }))).toBe(dollars(40 * 1.2e-6 + 60 * 4e-6));
    // One-hour cache writes (part of cacheWrite) at cache_creation_input_token_cost_above_1hr.
    const sonnet = price(prices.priceOf('claude-sonnet-4-5', 'anthropic'));
    expect(costOf(sonnet, usage({ cacheWrite: 10, cacheWrite1h: 4 }))).toBe(dollars(6 * 3.75e-6 + 4 * 6e-6));
    // Token counts that are not counts cost nothing rather than poisoning a sum.
    expect(costOf(gpt4o, usage({ input: Number.NaN, output: -5, cacheRead: Infinity }))).toBe(0);
  });

  it('applies the above-200k and above-272k tiers to every token once the whole prompt passes them', async () => {
    const { prices } = await table({ litellm: await file(LITELLM) });
    const sonnet = price(prices.priceOf('claude-sonnet-4-5', 'anthropic'));
    expect(sonnet.tiers).toEqual([{ above: 200_000, rates: { input: 6e-6, output: 22.5e-6, cacheRead: 0.6e-6, cacheWrite: 7.5e-6 } }]);
    // The prompt is input + cache reads + cache writes: exactly 200k stays on the base prices.
    const at = usage({ input: 150_000, cacheRead: 30_000, cacheWrite: 20_000, output: 1000 });
    expect(costOf(sonnet, at)).toBe(dollars(150_000 * 3e-6 + 30_000 * 0.3e-6 + 20_000 * 3.75e-6 + 1000 * 15e-6));
    const past = { ...at, cacheRead: 30_001 };
    expect(costOf(sonnet, past)).toBe(dollars(150_000 * 6e-6 + 30_001 * 0.6e-6 + 20_000 * 7.5e-6 + 1000 * 22.5e-6));
    // The one-hour write price has no tier of its own here: it stays.
    expect(costOf(sonnet, usage({ input: 300_000, cacheWrite: 10, cacheWrite1h: 10 }))).toBe(dollars(300_000 * 6e-6 + 10 * 6e-6));

    const gpt54 = price(prices.priceOf('gpt-5.4', 'openai'));
    expect(gpt54.tiers).toEqual([{ above: 272_000, rates: { input: 5e-6, output: 22.5e-6, cacheRead: 0.5e-6 } }]);
    expect(costOf(gpt54, usage({ input: 272_000, output: 10 }))).toBe(dollars(272_000 * 2.5e-6 + 10 * 15e-6));
    expect(costOf(gpt54, usage({ input: 200_000, cacheRead: 72_001, output: 10 }))).toBe(
      dollars(200_000 * 5e-6 + 72_001 * 0.5e-6 + 10 * 22.5e-6),
    );
  });

  it('reads tiers in any unit LiteLLM writes (128k, 100000) and applies the highest one passed over those below', () => {
    const entry = parsePriceEntry(
      'tiered',
      {
        input_cost_per_token: 1e-6,
        output_cost_per_token: 2e-6,
        cache_read_input_token_cost: 1e-7,
        input_cost_per_token_above_100000_tokens: 3e-6,
        input_cost_per_token_above_128k_tokens: 4e-6,
        output_cost_per_token_above_128k_tokens: 5e-6,
        cache_creation_input_token_cost_above_1hr_above_128k_tokens: 9e-6,
        input_cost_per_token_above_128k_tokens_priority: 1,
      },
      'litellm',
    )!;
    expect(entry.tiers).toEqual([
      { above: 100_000, rates: { input: 3e-6 } },
      { above: 128_000, rates: { input: 4e-6, output: 5e-6, cacheWrite1h: 9e-6 } },
    ]);
    expect(costOf(entry, usage({ input: 110_000, output: 1 }))).toBe(dollars(110_000 * 3e-6 + 2e-6));
    expect(costOf(entry, usage({ input: 130_000, output: 1, cacheRead: 1 }))).toBe(dollars(130_000 * 4e-6 + 5e-6 + 1e-7));
  });

  it('looks a model up as given, without its provider prefix and with the family prefix', async () => {
    expect(lookupNames('openai/gpt-4o', 'openai')).toEqual(['openai/gpt-4o', 'gpt-4o']);
    expect(lookupNames('gpt-4o', 'openai')).toEqual(['gpt-4o', 'openai/gpt-4o']);
    expect(lookupNames('openrouter/openai/gpt-4o', 'openai')).toEqual([
      'openrouter/openai/gpt-4o',
      'openai/gpt-4o',
      'openai/openai/gpt-4o',
    ]);
    const operator = await file({ 'anthropic/claude-private-1': { input_cost_per_token: 1e-6, output_cost_per_token: 2e-6 } });
    const { prices } = await table({ litellm: await file(LITELLM), operator });
    expect(price(prices.priceOf('openai/gpt-4o', 'openai')).model).toBe('gpt-4o');
    expect(price(prices.priceOf('anthropic/claude-sonnet-4-5-20250929', 'anthropic')).model).toBe('claude-sonnet-4-5-20250929');
    expect(price(prices.priceOf('openrouter/openai/gpt-4o', 'openai'))).toMatchObject({
      model: 'openrouter/openai/gpt-4o',
      provider: 'openrouter',
    });
    expect(price(prices.priceOf('claude-private-1', 'anthropic'))).toMatchObject({
      model: 'anthropic/claude-private-1',
      source: 'operator',
    });
    expect(price(prices.priceOf('litellm_proxy/claude-private-1', 'anthropic')).model).toBe('anthropic/claude-private-1');
    expect(prices.priceOf('claude-private-1', 'openai')).toBeNull();
  });

  it('prices a model named nowhere at null (the gateway refuses it), never at zero', async () => {
    const { prices } = await table({ litellm: await file(LITELLM) });
    for (const model of ['my-model', 'openai/my-model', 'gpt-4o-2099-01-01', 'GPT-4O', '', '  ', '*'])
      expect(prices.priceOf(model, 'openai'), model).toBeNull();
  });

  it("lets the operator's entries win over every LiteLLM name, and its '*' entries price only what no name matches", async () => {
    const operator = await file({
      'gpt-4o': { input_cost_per_token: 5e-6, output_cost_per_token: 2e-5 },
      'openai/*': { input_cost_per_token: 1e-6, output_cost_per_token: 1e-6, mode: 'chat' },
      '*': { input_cost_per_token: 9e-6, output_cost_per_token: 9e-6 },
    });
    const { prices } = await table({ litellm: await file(LITELLM), operator });
    expect(prices.describe()).toMatchObject({ litellm: PRICED_IN_LITELLM.length, operator: 3, operatorFrom: operator });
    const own = price(prices.priceOf('openai/gpt-4o', 'openai'));
    expect(own).toMatchObject({ model: 'gpt-4o', source: 'operator', provider: null });
    expect(costOf(own, usage({ input: 8, cacheRead: 3, output: 7 }))).toBe(dollars(11 * 5e-6 + 7 * 2e-5)); // no cache price: input's
    expect(price(prices.priceOf('gpt-5.4', 'openai')).source).toBe('litellm');
    expect(price(prices.priceOf('llama-3.3-70b', 'openai'))).toMatchObject({ model: 'openai/*', source: 'operator' });
    expect(price(prices.priceOf('claude-private-2', 'anthropic'))).toMatchObject({ model: '*', source: 'operator' });
  });

  it('refuses an operator table with an unpriced entry, naming it, and keeps the previous one', async () => {
    const operator = path.join(dir, 'operator-edited.json');
    await writeFile(operator, JSON.stringify({ 'my-model': { input_cost_per_token: 1e-6, output_cost_per_token: 2e-6 } }));
    const { prices, logs } = await table({ litellm: await file(LITELLM), operator });
    expect(price(prices.priceOf('my-model', 'openai')).source).toBe('operator');
    await writeFile(operator, JSON.stringify({ 'my-model': { input_cost_per_token: 1e-6 }, 'other-model': { input_cost_per_token: 0 } }));
    await prices.refresh();
    expect(prices.describe().errors.operator).toBe(
      `${operator}: "my-model" needs input_cost_per_token and output_cost_per_token (numbers >= 0, dollars per token)`,
    );
    expect(price(prices.priceOf('my-model', 'openai')).rates.output).toBe(2e-6);
    expect(logs.warnings().join('')).toContain('\\"my-model\\" needs input_cost_per_token');
  });
});

describe('refreshing the price table', () => {
  it('picks up a changed file', async () => {
    const litellm = path.join(dir, 'litellm-changing.json');
    await writeFile(litellm, JSON.stringify(LITELLM));
    const { prices } = await table({ litellm });
    const before = prices.describe().loadedAt!;
    expect(prices.priceOf('gpt-4o-mini', 'openai')).toBeNull();
    await writeFile(
      litellm,
      JSON.stringify({
        ...LITELLM,
        'gpt-4o': { ...LITELLM['gpt-4o'], input_cost_per_token: 2e-6 },
        'gpt-4o-mini': { input_cost_per_token: 1.5e-7, output_cost_per_token: 6e-7, litellm_provider: 'openai' },
      }),
    );
    await prices.refresh();
    expect(price(prices.priceOf('gpt-4o', 'openai')).rates.input).toBe(2e-6);
    expect(price(prices.priceOf('openai/gpt-4o-mini', 'openai')).rates.output).toBe(6e-7);
    expect(prices.describe().litellm).toBe(PRICED_IN_LITELLM.length + 1);
    expect(prices.describe().loadedAt!.getTime()).toBeGreaterThanOrEqual(before.getTime());
  });

  it.each([
    ['a broken file', '{"gpt-4o": {"input_cost_per_token": 2.5e-6,', /is not JSON \(/],
    ['an array', '[{"input_cost_per_token": 1}]', /is not a JSON object of models \(it holds an array\)$/],
    ['a number', '42', /is not a JSON object of models \(it holds number\)$/],
    ['null', 'null', /is not a JSON object of models \(it holds null\)$/],
    ['an object pricing no model', '{"error": {"message": "rate limited"}}', /prices no model \(not LiteLLM's model price file\?\)$/],
    ['an empty file', '', /is not JSON/],
  ])('keeps the previous table when the file becomes %s, with a clear warning', async (_what, content, message) => {
    const litellm = path.join(dir, `litellm-breaking-${++counter}.json`);
    await writeFile(litellm, JSON.stringify(LITELLM));
    const { prices, logs } = await table({ litellm });
    const loadedAt = prices.describe().loadedAt;
    await writeFile(litellm, content);
    await expect(prices.refresh()).resolves.toBeUndefined();
    expect(prices.describe()).toMatchObject({ litellm: PRICED_IN_LITELLM.length, loadedAt });
    expect(prices.describe().errors.litellm).toMatch(message);
    expect(price(prices.priceOf('gpt-4o', 'openai')).rates.input).toBe(2.5e-6);
    expect(logs.warnings()).toHaveLength(1);
    expect(logs.warnings()[0]).toContain('LLM prices not read; the previous table stays');
    // Fixed again: read again, and the error is gone.
    await writeFile(litellm, JSON.stringify(LITELLM));
    await prices.refresh();
    expect(prices.describe().errors.litellm).toBeNull();
  });

  it('starts with an empty table (every model unpriced) when a source cannot be read, and fills it once it can', async () => {
    const litellm = path.join(dir, 'litellm-later.json');
    const { prices, logs } = await table({ litellm });
    expect(prices.describe()).toMatchObject({ litellm: 0, loadedAt: null, from: null });
    expect(prices.describe().errors.litellm).toMatch(/ENOENT/);
    expect(prices.priceOf('gpt-4o', 'openai')).toBeNull();
    expect(logs.warnings()).toHaveLength(1);
    await writeFile(litellm, JSON.stringify(LITELLM));
    await prices.refresh();
    expect(price(prices.priceOf('gpt-4o', 'openai')).source).toBe('litellm');
  });

  it('asks a source given as a function again on each refresh (the agent server installed later)', async () => {
    let found: string | null = null;
    const { prices } = await table({ litellm: () => Promise.resolve(found) });
    expect(prices.describe().litellm).toBe(0);
    found = await file(LITELLM);
    await prices.refresh();
    expect(prices.describe()).toMatchObject({ litellm: PRICED_IN_LITELLM.length, from: found });
  });

  it('shares one read between refreshes called together', async () => {
    let asked = 0;
    const litellm = await file(LITELLM);
    const { prices } = await table({ litellm: () => (asked++, Promise.resolve(litellm)) });
    await Promise.all([prices.refresh(), prices.refresh(), prices.refresh()]);
    expect(asked).toBe(2); // the first read, then one for the three
  });

  it('refreshes on a timer until stopped', async () => {
    const litellm = await file(LITELLM);
    let asked = 0;
    let askedTwice!: () => void;
    const twice = new Promise<void>((resolve) => (askedTwice = resolve));
    const { prices } = await table({ litellm: () => (++asked === 3 && askedTwice(), Promise.resolve(litellm)) });
    const stop = prices.refreshEvery(10);
    await twice; // the first read, then two by the timer
    stop();
    await prices.refresh();
    const after = asked;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(asked).toBe(after);
  });

  it('refuses sources configured wrongly, without echoing a query string', async () => {
    await expect(table({ litellm: 'ftp://example.com/prices.json' })).rejects.toThrow('must be http(s), not ftp:');
    const withCredentials = table({ litellm: 'https://user:pa55@example.com/prices.json?token=s3cret' });
    await expect(withCredentials).rejects.toThrow('must not hold credentials (https://example.com/prices.json?…)');
    await expect(withCredentials).rejects.not.toThrow(/pa55|s3cret/);
  });
});

describe('an http(s) price source', () => {
  const MiB = 1024 * 1024;
  let server: Server;
  let base: string;
  let body = JSON.stringify(LITELLM);
  const seen: string[] = [];
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/prices.json': (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body),
    '/failing.json': (_req, res) => res.writeHead(500).end('upstream broke'),
    '/huge.json': (_req, res) => {
      // 21 MiB, chunked (no Content-Length): counted as it arrives.
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(MiB, 0x20);
      let sent = 0;
      const more = () => {
        while (sent < 21 && !res.destroyed) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    },
    '/declared-huge.json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(25 * MiB) });
      res.write('{"gpt-4o": '); // and never the rest
    },
    '/slow.json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"gpt-4o": '); // and never the rest
    },
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? '');
      const route = routes[new URL(req.url ?? '/', 'http://x').pathname];
      if (route) route(req, res);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads the table from a URL, shown without its query string', async () => {
    const { prices, logs } = await table({ litellm: `${base}/prices.json?token=s3cret` });
    expect(prices.describe()).toMatchObject({ litellm: PRICED_IN_LITELLM.length, from: `${base}/prices.json?…` });
    expect(seen).toContain('/prices.json?token=s3cret');
    expect(prices.cost(price(prices.priceOf('gpt-4o', 'openai')), usage({ input: 8, cacheRead: 3, output: 7 }))).toBe(9.375e-5);
    expect(logs.text()).toContain('LLM prices read');
    expect(logs.text()).not.toContain('s3cret');
  });

  it('picks up a changed answer on refresh, and keeps it when the server fails, without logging the query string', async () => {
    const { prices, logs } = await table({ litellm: `${base}/prices.json?token=s3cret` });
    body = JSON.stringify({ ...LITELLM, 'gpt-4o': { ...LITELLM['gpt-4o'], output_cost_per_token: 2e-5 } });
    await prices.refresh();
    body = JSON.stringify(LITELLM);
    expect(price(prices.priceOf('gpt-4o', 'openai')).rates.output).toBe(2e-5);

    const failing = await table({ litellm: `${base}/failing.json?token=s3cret` });
    expect(failing.prices.describe().errors.litellm).toBe(`${base}/failing.json?… answered HTTP 500`);
    const vacant = createServer();
    await new Promise<void>((resolve) => vacant.listen(0, '127.0.0.1', resolve));
    const port = (vacant.address() as AddressInfo).port;
    await new Promise((resolve) => vacant.close(resolve));
    const closed = await table({ litellm: `http://127.0.0.1:${port}/prices.json?token=s3cret` });
    expect(closed.prices.describe().errors.litellm).toBe(`http://127.0.0.1:${port}/prices.json?…: not reached (ECONNREFUSED)`);
    for (const text of [logs.text(), failing.logs.text(), closed.logs.text()]) expect(text).not.toContain('s3cret');
    expect(failing.logs.warnings()).toHaveLength(1);
  });

  it('stops reading past 20 MB, and refuses a Content-Length past it before reading the body', async () => {
    const huge = await table({ litellm: `${base}/huge.json` });
    expect(huge.prices.describe().errors.litellm).toBe(`${base}/huge.json is larger than 20 MB`);
    expect(huge.prices.describe().litellm).toBe(0);
    const started = Date.now();
    const declared = await table({ litellm: `${base}/declared-huge.json` });
    expect(declared.prices.describe().errors.litellm).toBe(`${base}/declared-huge.json is larger than 20 MB`);
    expect(Date.now() - started).toBeLessThan(5000); // not waiting for a body that never comes
  });

  it('gives up on an answer that does not arrive whole in time', async () => {
    const { prices } = await table({ litellm: `${base}/slow.json` }, { maxBytes: 20 * MiB, timeoutMs: 300 });
    expect(prices.describe().errors.litellm).toBe(`${base}/slow.json: no whole answer within 0.3 s`);
  });
});

describe("LiteLLM's price file in the agent server's venv", () => {
  it('is found in a ready venv of the version, newest Python first, and not elsewhere', async () => {
    const cache = await mkdtemp(path.join(dir, 'cache-'));
    const place = async (venv: string, minor: number, ready: boolean) => {
      const litellmDir = path.join(cache, venv, 'lib', `python3.${minor}`, 'site-packages', 'litellm');
      await mkdir(litellmDir, { recursive: true });
      await writeFile(path.join(litellmDir, 'model_prices_and_context_window_backup.json'), JSON.stringify(LITELLM));
      if (ready) await writeFile(path.join(cache, venv, '.ready'), '');
      return path.join(litellmDir, 'model_prices_and_context_window_backup.json');
    };
    expect(await litellmPricesIn(path.join(cache, 'absent'), '1.58.0')).toBeNull();
    await place('agent-server-1.58.0-py3.13', 13, false); // still being installed
    expect(await litellmPricesIn(cache, '1.58.0')).toBeNull();
    const py312 = await place('agent-server-1.58.0-py3.12', 12, true);
    await place('agent-server-1.58.2-py3.13', 13, true);
    await place('.agent-server-1.58.0-py3.13.tmp.123', 13, true);
    expect(await litellmPricesIn(cache, '1.58.0')).toBe(py312);
    await writeFile(path.join(cache, 'agent-server-1.58.0-py3.13', '.ready'), '');
    expect(await litellmPricesIn(cache, '1.58.0')).toMatch(/agent-server-1\.58\.0-py3\.13\/lib\/python3\.13\/site-packages\/litellm\//);
    expect(await litellmPricesIn(cache, '1.58')).toBeNull();
  });

  it.skipIf(!real)(
    `prices gpt-4o and claude-sonnet-4-5-20250929 from the installed agent server's file (skipped when the agent server ${config.sandbox.agentServerVersion} is not installed)`,
    async () => {
      const { prices, logs } = await table({ litellm: real });
      expect(prices.describe().litellm).toBeGreaterThan(2000);
      expect(prices.describe().errors.litellm).toBeNull();
      const gpt4o = price(prices.priceOf('openai/gpt-4o', 'openai'));
      expect(gpt4o).toMatchObject({ model: 'gpt-4o', source: 'litellm', provider: 'openai' });
      expect(prices.cost(gpt4o, usage({ input: 8, cacheRead: 3, output: 7 }))).toBe(9.375e-5);
      const sonnet = price(prices.priceOf('claude-sonnet-4-5-20250929', 'anthropic'));
      expect(sonnet).toMatchObject({ model: 'claude-sonnet-4-5-20250929', provider: 'anthropic' });
      expect(prices.cost(sonnet, usage({ input: 11, cacheRead: 3, cacheWrite: 2, output: 7 }))).toBe(0.0001464);
      // A tier on real data, as LiteLLM 1.105.7's cost_per_token prices it (prompt 300k of which 50k cached, 1k out).
      const gpt54 = price(prices.priceOf('gpt-5.4', 'openai'));
      expect(prices.cost(gpt54, usage({ input: 250_000, cacheRead: 50_000, output: 1000 }))).toBe(1.2975);
      expect(prices.priceOf('my-local-model', 'openai')).toBeNull();
      expect(logs.warnings()).toEqual([]);
    },
  );
});
