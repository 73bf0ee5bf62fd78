// A webhook receiver on 127.0.0.1, as a customer would write one: every request is verified
// with the published Standard Webhooks library (npm standardwebhooks) against the endpoint's
// secret, and recorded. Switches: answer with an outage (503), hold requests open (a hung
// receiver), or decide per request. De-duplication by webhook-id is the test's to do (uniqueEvents).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Receipt {
  id: string;
  attempt: number;
  timestamp: number;
  /** The library accepted the signature with the secret(s) set. */
  verified: boolean;
  /** Which of the secrets verified it (index in setSecrets' list), or -1. */
  verifiedBy: number;
  body: { id: string; type: string; timestamp: string; data: Record<string, unknown> };
  headers: http.IncomingHttpHeaders;
  /** What the receiver answered. */
  answered: number | 'held';
}

export type Mode = 'ok' | 'outage' | 'hang' | ((receipt: Omit<Receipt, 'answered'>) => number);

export interface WebhookReceiver {
  url: string;
  receipts: Receipt[];
  mode: Mode;
  setSecrets(...secrets: string[]): void;
  /** Drops the connections of held requests (mode 'hang'): the sender sees a reset. */
  dropHeld(): void;
  /** The first receipt of each event id that was answered 2xx, in arrival order. */
  uniqueEvents(): Receipt['body'][];
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let verifiers: Webhook[] = [];
  const held: http.ServerResponse[] = [];
  const receiver: WebhookReceiver = {
    url: '',
    receipts: [],
    mode: 'ok',
    setSecrets: (...secrets) => void (verifiers = secrets.map((s) => new Webhook(s))),
    uniqueEvents: () => {
      const seen = new Set<string>();
      return receiver.receipts
        .filter((r) => typeof r.answered === 'number' && r.answered < 300 && !seen.has(r.id) && seen.add(r.id))
        .map((r) => r.body);
    },
    dropHeld: () => {
      for (const res of held.splice(0)) res.destroy();
    },
    close: async () => {
      for (const res of held) res.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const verifiedBy = verifiers.findIndex((verifier) => {
        try {
          verifier.verify(raw, headers);
          return true;
        } catch {
          return false;
        }
      });
      const receipt = {
        id: String(req.headers['webhook-id']),
        attempt: Number(req.headers['webhook-attempt']),
        timestamp: Number(req.headers['webhook-timestamp']),
        verified: verifiedBy >= 0,
        verifiedBy,
        body: JSON.parse(raw) as Receipt['body'],
        headers: req.headers,
      };
      const mode = receiver.mode;
      if (mode === 'hang') {
        receiver.receipts.push({ ...receipt, answered: 'held' });
        held.push(res);
        return;
      }
      const status = mode === 'ok' ? 204 : mode === 'outage' ? 503 : mode(receipt);
      receiver.receipts.push({ ...receipt, answered: status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
