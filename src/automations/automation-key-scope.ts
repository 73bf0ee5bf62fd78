// What an automation key opens (docs/automation-service-notes.md). The key sits with the
// automation service and in every run's sandbox, where an agent runs code a prompt chose: it
// opens what runs use and nothing else of its user's — who they are (users/me, which answers
// an automation key without secrets), the run's sandbox, and the run's reports — so code in a
// run cannot read the user's conversations, change their settings, make keys or automations,
// or sign in as them. Procedure paths, checked in authedProcedure (src/trpc/procedures.ts).
export const AUTOMATION_KEY_PROCEDURES: ReadonlySet<string> = new Set([
  'users.me',
  'sandboxes.start',
  'sandboxes.search',
  'sandboxes.batchGet',
  'sandboxes.pause',
  'sandboxes.resume',
  'sandboxes.delete',
  // A run's phase and completion reports (/api/automation/v1/runs/…), forwarded with this key.
  'automations.runReportKey',
  'automations.runOutcome',
]);
