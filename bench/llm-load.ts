// The LLM gateway bench's load generator: bench/load.ts's raw keep-alive sockets (one call at a
// time per connection, no pipelining), plus, for a streamed answer, the time to its first
// server-sent event: the first "data:" after the response head, as the agent's client sees
// its first token arrive. A call counts as done once its whole response has arrived.
import net from 'node:net';
import { buildRequest, parseResponse, type LoadSpec } from './load.js';

export interface LlmLoadResult {
  /** Calls recorded (after the warm-up). */
  calls: number;
  /** Calls including the warm-up (what the generator's CPU is spent on). */
  allCalls: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** Time to the first data event (streamed answers only; NaN for JSON). */
  ttftP50: number;
  ttftP99: number;
  unexpected: number;
  firstUnexpected: string | null;
  socketErrors: number;
}

const CRLF2 = Buffer.from('\r\n\r\n');
const DATA = Buffer.from('data:');

/** perConnection: headers added to connection i's requests (i modulo their number), e.g. each its own token. */
export async function runLlmLoad(spec: LoadSpec, perConnection: Record<string, string>[] = [{}]): Promise<LlmLoadResult> {
  const { hostname, port } = new URL(spec.url);
  const requests = perConnection.map((headers) => buildRequest({ ...spec, headers: { ...spec.headers, ...headers } }));
  const started = performance.now();
  const recordFrom = started + spec.warmupMs;
  const deadline = recordFrom + spec.durationMs;
  const latencies: number[] = [];
  const firstEvents: number[] = [];
  let unexpected = 0;
  let firstUnexpected: string | null = null;
  let socketErrors = 0;
  let allCalls = 0;

  const connection = (index: number) =>
    new Promise<void>((resolve) => {
      const request = requests[index % requests.length]!;
      let pending: Buffer = Buffer.alloc(0);
      let sentAt = 0;
      let firstEventAt = 0;
      let finished = false;
      const socket = net.connect({ host: hostname, port: Number(port), noDelay: true });
      const send = () => {
        sentAt = performance.now();
        firstEventAt = 0;
        socket.write(request);
      };
      const finish = () => {
        if (finished) return;
        finished = true;
        socket.destroy();
        resolve();
      };
      socket.on('connect', send);
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        if (firstEventAt === 0) {
          const headEnd = pending.indexOf(CRLF2);
          if (headEnd >= 0 && pending.indexOf(DATA, headEnd + 4) >= 0) firstEventAt = performance.now();
        }
        const response = parseResponse(pending);
        if (!response) return;
        const now = performance.now();
        allCalls++;
        if (now >= recordFrom) {
          latencies.push(now - sentAt);
          if (firstEventAt) firstEvents.push(firstEventAt - sentAt);
          if (response.status !== spec.expectStatus) {
            unexpected++;
            firstUnexpected ??= `${response.status} ${pending.toString('utf8', 0, Math.min(response.end, 600))}`;
          }
        }
        pending = pending.subarray(response.end);
        if (now >= deadline) finish();
        else send();
      });
      socket.on('error', () => {
        socketErrors++;
      });
      socket.on('close', () => {
        if (finished) return;
        finished = true;
        if (performance.now() < deadline) void connection(index).then(resolve);
        else resolve();
      });
    });

  await Promise.all(Array.from({ length: spec.connections }, (_, i) => connection(i)));
  const seconds = (performance.now() - recordFrom) / 1000;
  const pct = (values: number[], p: number) => {
    const sorted = Float64Array.from(values).sort();
    return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : NaN;
  };
  return {
    calls: latencies.length,
    allCalls,
    seconds,
    rps: latencies.length / seconds,
    p50: pct(latencies, 0.5),
    p99: pct(latencies, 0.99),
    ttftP50: pct(firstEvents, 0.5),
    ttftP99: pct(firstEvents, 0.99),
    unexpected,
    firstUnexpected,
    socketErrors,
  };
}
