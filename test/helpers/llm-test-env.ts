// The LLM gateway's settings every test service starts with (docs/llm-gateway.md): the fakes'
// loopback addresses allowed as upstreams (an operator's explicit choice; production refuses
// loopback unless listed), and small price tables: two LiteLLM-format entries and the
// operator's "*" entry pricing every other (stub) model at $1 per million input tokens and $2
// per million output tokens. A test that needs other prices or rules passes its own.
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/processes.js';

export const LLM_TEST_ENV: Record<string, string> = {
  LLM_UPSTREAM_HOSTS: '*,127.0.0.1,localhost',
  LLM_PRICES: path.join(PACKAGE_ROOT, 'test/fixtures/llm-prices.json'),
  LLM_OPERATOR_PRICES: path.join(PACKAGE_ROOT, 'test/fixtures/llm-operator-prices.json'),
};

/** What the operator's "*" entry charges a call (dollars). */
export const stubCallCost = (input: number, output: number) => input * 1e-6 + output * 2e-6;

/** What a gateway token opens in a test service: the model, base URL and key its calls go with. */
export async function upstreamOf(
  deps: { services: { llmRoutes: { byToken(token: string): Promise<unknown>; openKey(route: never): string | null } } },
  token: string,
): Promise<{ model: string; baseUrl: string | null; apiKey: string | null } | null> {
  const route = (await deps.services.llmRoutes.byToken(token)) as { model: string; baseUrl: string | null } | null;
  return route ? { model: route.model, baseUrl: route.baseUrl, apiKey: deps.services.llmRoutes.openKey(route as never) } : null;
}
