// The gateway's price table: LiteLLM's model price data (model_prices_and_context_window.json,
// the ecosystem's reference) and the operator's own table in the same format, each read from a
// file (or, LiteLLM's, an http(s) URL) and read again by refresh(), so prices change without a code
// change or a restart. It answers a model's price and a call's cost in dollars. It does not read
// providers' usage shapes, record spend or refuse calls: a model priced nowhere is null, and the
// gateway refuses it (never free by accident).
//
// Entries (both tables): { "<model>": { input_cost_per_token, output_cost_per_token,
// cache_read_input_token_cost?, cache_creation_input_token_cost?, cache_creation_input_token_cost_above_1hr?,
// output_cost_per_reasoning_token?, <any of these>_above_<N>[k]_tokens?, litellm_provider?, mode? } },
// dollars per token. LiteLLM's `sample_spec` and its entries without both an input and an output
// price are skipped (image, audio, search models); in the operator's table such an entry is an
// error, which keeps the previous table. The operator's table may hold "*" and "openai/*" or
// "anthropic/*": the price of a model that no name in either table matches (self-hosted models).
// Not read: service tiers (_priority, _flex, _batches), provider_specific_entry multipliers
// (regions, Anthropic's fast mode), tiered_pricing ranges (dashscope, volcengine), per-query costs.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { costOf, type CallUsage, type ModelPrice, type TokenRates } from './usage.js';

export { costOf, type CallUsage, type ModelPrice, type PriceTier, type TokenRates } from './usage.js';

export type ProviderFamily = 'openai' | 'anthropic';

export interface PriceTableState {
  /** How many models each table prices. */
  litellm: number;
  operator: number;
  /** When LiteLLM's table was last read, and from where (a URL without its query string); null before the first read. */
  loadedAt: Date | null;
  from: string | null;
  operatorLoadedAt: Date | null;
  operatorFrom: string | null;
  /** The last failed read of each source, null once one succeeds. */
  errors: { litellm: string | null; operator: string | null };
}

export interface PriceTable {
  /** The price of a model as the caller names it; null when neither table has it. Operator entries win. */
  priceOf(model: string, family: ProviderFamily): ModelPrice | null;
  /** Dollars for a call's usage at that price. */
  cost(price: ModelPrice, usage: CallUsage): number;
  describe(): PriceTableState;
}

/** A file path or an http(s) URL; or a function answering one when read (null: none yet, e.g. the agent server not installed). */
export type PriceSource = string | null | (() => Promise<string | null>);

export interface PriceSources {
  /** LiteLLM's model_prices_and_context_window JSON: a file path or an http(s) URL. */
  litellm: PriceSource;
  /** The operator's own table (same entry format, may hold "*" entries): a file path. */
  operator: PriceSource;
}

export interface PriceReadLimits {
  maxBytes: number;
  timeoutMs: number;
}

export const PRICE_READ_LIMITS: PriceReadLimits = { maxBytes: 20 * 1024 * 1024, timeoutMs: 30_000 };

export interface RefreshablePriceTable extends PriceTable {
  /** Reads both sources again; a failed read keeps that source's previous table and logs a warning. Never rejects. */
  refresh(): Promise<void>;
  /** refresh() every intervalMs (an unref'd timer); answers the function that stops it. */
  refreshEvery(intervalMs: number): () => void;
}

const RATE_FIELDS = new Map<string, keyof TokenRates>([
  ['input_cost_per_token', 'input'],
  ['output_cost_per_token', 'output'],
  ['cache_read_input_token_cost', 'cacheRead'],
  ['cache_creation_input_token_cost', 'cacheWrite'],
  ['cache_creation_input_token_cost_above_1hr', 'cacheWrite1h'],
  ['output_cost_per_reasoning_token', 'reasoning'],
]);
const TIER_KEY =
  /^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost|cache_creation_input_token_cost_above_1hr)_above_(\d+)(k?)_tokens$/;

const rateOf = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined);
const textOf = (value: unknown) => (typeof value === 'string' ? value : null);

/** An entry's price, or null when it is not an object or lacks an input or output price (numbers >= 0). */
export function parsePriceEntry(model: string, entry: unknown, source: ModelPrice['source']): ModelPrice | null {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return null;
  const fields = entry as Record<string, unknown>;
  const input = rateOf(fields.input_cost_per_token);
  const output = rateOf(fields.output_cost_per_token);
  if (input === undefined || output === undefined) return null;
  const rates: TokenRates = { input, output, cacheRead: null, cacheWrite: null, cacheWrite1h: null, reasoning: null };
  const tiers = new Map<number, Partial<TokenRates>>();
  for (const [key, value] of Object.entries(fields)) {
    const rate = rateOf(value);
    if (rate === undefined) continue;
    const field = RATE_FIELDS.get(key);
    if (field && field !== 'input' && field !== 'output') rates[field] = rate;
    const tier = TIER_KEY.exec(key);
    if (tier) {
      const above = Number(tier[2]) * (tier[3] ? 1000 : 1);
      tiers.set(above, { ...tiers.get(above), [RATE_FIELDS.get(tier[1]!)!]: rate });
    }
  }
  return {
    model,
    source,
    provider: textOf(fields.litellm_provider),
    mode: textOf(fields.mode),
    rates,
    tiers: [...tiers].sort(([a], [b]) => a - b).map(([above, tierRates]) => ({ above, rates: tierRates })),
  };
}

/** The names a model is looked up by, in order: as given, without its provider prefix, with the family's prefix. */
export function lookupNames(model: string, family: ProviderFamily): string[] {
  const slash = model.indexOf('/');
  const bare = slash > 0 ? model.slice(slash + 1) : model;
  return [...new Set([model, bare, `${family}/${bare}`])];
}

/** Why a configured source cannot be read (a message that never echoes a URL's query or credentials), or null. */
export function priceSourceProblem(source: string): string | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) return source.trim() ? null : 'an empty price source';
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    return 'a price source URL that does not parse';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `a price source URL must be http(s), not ${url.protocol}`;
  if (url.username || url.password) return `a price source URL must not hold credentials (${shownSource(source)})`;
  return null;
}

/** A source as logs and describe() show it: a URL without credentials, query or fragment. */
export function shownSource(source: string): string {
  if (!/^https?:\/\//i.test(source)) return source;
  try {
    const url = new URL(source);
    return `${url.protocol}//${url.host}${url.pathname}${url.search ? '?…' : ''}`;
  } catch {
    return '(a URL that does not parse)';
  }
}

/** A message with a source's URL, or its query string, shown as shownSource() shows it. */
function scrubbed(message: string, source: string): string {
  const query = /^https?:\/\//i.test(source) ? /\?[^#]*/.exec(source)?.[0] : undefined;
  const shown = message.split(source).join(shownSource(source));
  return query && query.length > 1 ? shown.split(query).join('?…') : shown;
}

/** A table's prices by model; a file that is not a JSON object of models is an error with a clear message. */
export function parsePriceTable(text: string, source: ModelPrice['source'], shown: string): Map<string, ModelPrice> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new Error(`${shown} is not JSON (${(error as Error).message.slice(0, 160)})`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new Error(
      `${shown} is not a JSON object of models (it holds ${Array.isArray(data) ? 'an array' : String(data === null ? null : typeof data)})`,
    );
  const prices = new Map<string, ModelPrice>();
  for (const [model, entry] of Object.entries(data)) {
    if (model === 'sample_spec') continue;
    const price = parsePriceEntry(model, entry, source);
    if (price) prices.set(model, price);
    else if (source === 'operator')
      throw new Error(
        `${shown}: "${model.slice(0, 100)}" needs input_cost_per_token and output_cost_per_token (numbers >= 0, dollars per token)`,
      );
  }
  // A wrong file or an error answer ({"message": …}) must not replace a good table with an empty one.
  if (source === 'litellm' && prices.size === 0) throw new Error(`${shown} prices no model (not LiteLLM's model price file?)`);
  return prices;
}

/** A source's text, bounded in size (and, over http, in time: the whole download within limits.timeoutMs). */
export async function readPriceSource(source: string, limits: PriceReadLimits = PRICE_READ_LIMITS): Promise<string> {
  const problem = priceSourceProblem(source);
  if (problem) throw new Error(problem);
  const shown = shownSource(source);
  const tooLarge = () => new Error(`${shown} is larger than ${Math.round(limits.maxBytes / 1024 / 1024)} MB`);
  if (!/^https?:\/\//i.test(source)) {
    if ((await stat(source)).size > limits.maxBytes) throw tooLarge();
    return readFile(source, 'utf8');
  }
  const timedOut = () => new Error(`${shown}: no whole answer within ${limits.timeoutMs / 1000} s`);
  let response: Response;
  try {
    response = await fetch(source, { signal: AbortSignal.timeout(limits.timeoutMs), headers: { accept: 'application/json' } });
  } catch (error) {
    if ((error as Error).name === 'TimeoutError') throw timedOut();
    const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
    const why = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : (error as Error).name;
    throw new Error(`${shown}: not reached (${scrubbed(why, source).slice(0, 160)})`);
  }
  const drop = () => response.body?.cancel().catch(() => {});
  if (!response.ok) {
    await drop();
    throw new Error(`${shown} answered HTTP ${response.status}`);
  }
  if (Number(response.headers.get('content-length')) > limits.maxBytes) {
    await drop();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.byteLength;
      if (size > limits.maxBytes) throw tooLarge(); // leaving the loop cancels the body: the rest is never read
      chunks.push(chunk);
    }
  } catch (error) {
    if ((error as Error).name === 'TimeoutError') throw timedOut();
    throw error;
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** LiteLLM's price file in the agent server's venv (scripts/setup-agent-server.sh's cache folder), newest Python first; null when absent. */
export async function litellmPricesIn(cacheDir: string, agentServerVersion: string): Promise<string | null> {
  const prefix = `agent-server-${agentServerVersion}-py3.`;
  const names = await readdir(cacheDir).catch(() => [] as string[]);
  const minors = names
    .filter((name) => name.startsWith(prefix) && /^\d+$/.test(name.slice(prefix.length)))
    .map((name) => Number(name.slice(prefix.length)))
    .sort((a, b) => b - a);
  for (const minor of minors) {
    const venv = path.join(cacheDir, `${prefix}${minor}`);
    const file = path.join(venv, 'lib', `python3.${minor}`, 'site-packages', 'litellm', 'model_prices_and_context_window_backup.json');
    // .ready: the venv's install finished (a venv still being built lives under another name, but an old one may lack it).
    if ((await isFile(path.join(venv, '.ready'))) && (await isFile(file))) return file;
  }
  return null;
}

const isFile = (file: string) =>
  stat(file).then(
    (s) => s.isFile(),
    () => false,
  );

interface Loaded {
  prices: Map<string, ModelPrice>;
  loadedAt: Date | null;
  from: string | null;
  error: string | null;
}

/**
 * A price table read from its sources. A source that cannot be read leaves its table empty (every
 * model it would price is then null) and logs a warning; it never rejects for a source's failure, only
 * for a source configured wrongly (a URL that is not http(s), or holds credentials).
 */
export async function createPriceTable(
  sources: PriceSources,
  log: Logger,
  limits: PriceReadLimits = PRICE_READ_LIMITS,
): Promise<RefreshablePriceTable> {
  for (const source of [sources.litellm, sources.operator]) {
    const problem = typeof source === 'string' ? priceSourceProblem(source) : null;
    if (problem) throw new Error(`LLM price table: ${problem}`);
  }
  const tables: Record<ModelPrice['source'], Loaded> = {
    litellm: { prices: new Map(), loadedAt: null, from: null, error: null },
    operator: { prices: new Map(), loadedAt: null, from: null, error: null },
  };
  let refreshing: Promise<void> | undefined;

  async function load(kind: ModelPrice['source']): Promise<void> {
    const configured = sources[kind];
    let source: string | null;
    try {
      source = typeof configured === 'function' ? await configured() : configured;
    } catch (error) {
      source = null;
      log.warn({ table: kind, err: (error as Error).message }, 'LLM price source not found; the previous table stays');
    }
    if (!source) return;
    const shown = shownSource(source);
    const table = tables[kind];
    try {
      const prices = parsePriceTable(await readPriceSource(source, limits), kind, shown);
      const changed = prices.size !== table.prices.size || shown !== table.from;
      tables[kind] = { prices, loadedAt: new Date(), from: shown, error: null };
      log[changed ? 'info' : 'debug']({ table: kind, from: shown, models: prices.size }, 'LLM prices read');
    } catch (error) {
      const message = scrubbed((error as Error).message, source);
      table.error = message;
      log.warn({ table: kind, from: shown, err: message, kept: table.prices.size }, 'LLM prices not read; the previous table stays');
    }
  }

  const priceTable: RefreshablePriceTable = {
    priceOf(model, family) {
      if (!model.trim()) return null;
      const names = lookupNames(model, family);
      for (const kind of ['operator', 'litellm'] as const)
        for (const name of names) {
          const price = tables[kind].prices.get(name);
          if (price) return price;
        }
      return tables.operator.prices.get(`${family}/*`) ?? tables.operator.prices.get('*') ?? null;
    },
    cost: costOf,
    describe: () => ({
      litellm: tables.litellm.prices.size,
      operator: tables.operator.prices.size,
      loadedAt: tables.litellm.loadedAt,
      from: tables.litellm.from,
      operatorLoadedAt: tables.operator.loadedAt,
      operatorFrom: tables.operator.from,
      errors: { litellm: tables.litellm.error, operator: tables.operator.error },
    }),
    refresh() {
      refreshing ??= Promise.all([load('litellm'), load('operator')]).then(
        () => void (refreshing = undefined),
        () => void (refreshing = undefined),
      );
      return refreshing;
    },
    refreshEvery(intervalMs) {
      const timer = setInterval(() => void priceTable.refresh(), intervalMs);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
  await priceTable.refresh();
  if (!sources.litellm && !sources.operator) log.warn('no LLM price source: every model is unpriced and refused');
  return priceTable;
}
