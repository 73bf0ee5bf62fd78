// The operator's lifecycle webhooks (docs/webhooks.md): endpoints owned by ALL_USERS, which hear
// every user's events. The CLI only writes the database; the running service delivers.
import { ALL_USERS, type Models } from '../models/index.js';
import { CreateWebhookEndpointInputSchema } from '../contract/webhook-endpoints.schema.js';
import type { Config } from './config/config.js';
import type { SecretBox } from './crypto.js';
import { DecisionClaims } from './db/claims.js';
import { AppError } from './errors.js';
import type { Logger } from './logger.js';
import { createMetrics } from './metrics.js';
import { createLifecycleWebhooks } from './lifecycle-webhooks/index.js';

export const WEBHOOK_USAGE = `  cli webhooks add --url <url> [--events <type,type>] [--description <text>]   (the secret is the last line)
  cli webhooks list
  cli webhooks remove <endpoint-id>
  cli webhooks rotate-secret <endpoint-id>
  cli webhooks test <endpoint-id>
  cli webhooks deliveries <endpoint-id>`;

interface Options {
  url?: string | undefined;
  events?: string | undefined;
  description?: string | undefined;
}

export async function operatorWebhooks(
  deps: { models: Models; box: SecretBox; config: Config; log: Logger },
  command: string | undefined,
  rest: string[],
  options: Options,
  fail: (message: string) => number,
): Promise<number> {
  const { models, box, config, log } = deps;
  const { service } = createLifecycleWebhooks({
    models,
    box,
    claims: new DecisionClaims(models),
    config: config.webhooks,
    metrics: createMetrics(),
    log,
  });
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const id = rest[0];
  try {
    if (command === 'add') {
      const input = CreateWebhookEndpointInputSchema.safeParse({
        url: options.url,
        description: options.description ?? null,
        event_types: options.events ? options.events.split(',').map((t) => t.trim()) : null,
      });
      if (!input.success) return fail(input.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('\n'));
      const created = await service.create(ALL_USERS, input.data);
      out(`created endpoint ${created.id} for every user's events: ${created.event_types?.join(',') ?? 'all types'}`);
      out(created.secret);
      return 0;
    }
    if (command === 'list') {
      for (const e of (await service.search(ALL_USERS, null, 100)).items) {
        out(`${e.id}\t${e.url}\t${e.event_types?.join(',') ?? '*'}\t${e.created_at}\t${e.description ?? ''}`);
      }
      return 0;
    }
    if (!id) return fail(`webhooks ${command ?? ''} needs <endpoint-id>\n${WEBHOOK_USAGE}`);
    if (command === 'remove') {
      await service.delete(ALL_USERS, id);
      out(`removed ${id}`);
      return 0;
    }
    if (command === 'rotate-secret') {
      const rotated = await service.rotateSecret(ALL_USERS, id);
      out(`rotated the secret of ${id}; the previous one also signs until ${rotated.previous_secret_expires_at}`);
      out(rotated.secret);
      return 0;
    }
    if (command === 'test') {
      const delivery = await service.sendTest(ALL_USERS, id);
      out(`queued ${delivery.event_id} (delivery ${delivery.id}); the running service sends it`);
      return 0;
    }
    if (command === 'deliveries') {
      for (const d of (await service.deliveries(ALL_USERS, id, { limit: 100 })).items) {
        out(`${d.created_at}\t${d.event_type}\t${d.status}\t${d.attempt_count} attempts\t${d.attempts.at(-1)?.error ?? ''}`);
      }
      return 0;
    }
    return fail(`unknown command: webhooks ${command ?? ''}\n${WEBHOOK_USAGE}`);
  } catch (error) {
    if (error instanceof AppError) return fail(error.message);
    throw error;
  }
}
