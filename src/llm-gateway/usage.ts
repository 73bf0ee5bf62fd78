// What one LLM call costs: its tokens, normalised across providers (CallUsage), a model's
// per-token prices (ModelPrice, as the price table reads them from LiteLLM's format) and the
// dollars of the one against the other. It reads no provider's answer and no price file
// (prices.ts reads the tables; the gateway turns each provider's usage object into a CallUsage).

/** Tokens of one call, normalised: input excludes cache reads and writes. */
export interface CallUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Of output, the reasoning tokens (priced at output_cost_per_reasoning_token where the entry has one). */
  reasoning?: number;
  /** Of cacheWrite, the tokens cached for an hour (Anthropic's ttl "1h"; cache_creation_input_token_cost_above_1hr). */
  cacheWrite1h?: number;
}

/** Dollars per token; a null cache rate is billed at the input rate, a null reasoning rate at the output rate. */
export interface TokenRates {
  input: number;
  output: number;
  cacheRead: number | null;
  cacheWrite: number | null;
  cacheWrite1h: number | null;
  reasoning: number | null;
}

/** The rates that replace those below once a call's whole prompt (input + cache reads + writes) passes `above` tokens. */
export interface PriceTier {
  above: number;
  rates: Partial<TokenRates>;
}

export interface ModelPrice {
  /** The table key that matched. */
  model: string;
  source: 'operator' | 'litellm';
  /** The entry's litellm_provider and mode, as written (null when absent). */
  provider: string | null;
  mode: string | null;
  rates: TokenRates;
  /** Ascending by threshold; each one passed applies over the ones below. */
  tiers: readonly PriceTier[];
}

/** Dollars for a call's usage at a price, to 12 significant digits (3e-6·11 + … adds up to 0.00014639999999999998). */
export function costOf(price: ModelPrice, usage: CallUsage): number {
  const tokens = (n: number | undefined) => (n !== undefined && Number.isFinite(n) && n > 0 ? n : 0);
  const [input, output, cacheRead, cacheWrite] = [
    tokens(usage.input),
    tokens(usage.output),
    tokens(usage.cacheRead),
    tokens(usage.cacheWrite),
  ];
  const reasoning = Math.min(tokens(usage.reasoning), output);
  const written1h = Math.min(tokens(usage.cacheWrite1h), cacheWrite);
  let rates: TokenRates = price.rates;
  for (const tier of price.tiers) if (input + cacheRead + cacheWrite > tier.above) rates = { ...rates, ...tier.rates };
  const writeRate = rates.cacheWrite ?? rates.input;
  const dollars =
    input * rates.input +
    (output - reasoning) * rates.output +
    reasoning * (rates.reasoning ?? rates.output) +
    cacheRead * (rates.cacheRead ?? rates.input) +
    (cacheWrite - written1h) * writeRate +
    written1h * (rates.cacheWrite1h ?? writeRate);
  return Number(dollars.toPrecision(12));
}
