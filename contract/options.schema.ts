// /api/options/*: what the web UI reads before anything else (docs/api.md).
import { z } from 'zod';

export const FeatureFlagsSchema = z
  .object({
    ENABLE_BILLING: z.boolean(),
    HIDE_LLM_SETTINGS: z.boolean(),
    ENABLE_JIRA: z.boolean(),
    ENABLE_JIRA_DC: z.boolean(),
    ENABLE_LINEAR: z.boolean(),
  })
  .meta({ id: 'FeatureFlags' });

export const WebConfigSchema = z
  .object({
    APP_MODE: z.enum(['oss', 'saas']),
    GITHUB_CLIENT_ID: z.string(),
    // Empty: the UI starts no analytics (nothing leaves the browser for PostHog).
    POSTHOG_CLIENT_KEY: z.string(),
    // Always an object: the UI reads its fields without checking it exists.
    FEATURE_FLAGS: FeatureFlagsSchema,
    // Present only when a maintenance window is configured (the UI shows a banner).
    MAINTENANCE: z.object({ startTime: z.string() }).optional(),
  })
  .meta({ id: 'WebConfig' });
export type WebConfig = z.infer<typeof WebConfigSchema>;

export const NameListSchema = z.array(z.string());
