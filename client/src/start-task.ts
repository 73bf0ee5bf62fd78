import type { StartTaskStatus } from './types.js';

/**
 * The statuses a start task passes through, in order; ERROR can end it at any of them.
 * For progress displays (test/client/package.test.ts keeps it equal to the service's list).
 */
export const START_TASK_STEPS = [
  'WORKING',
  'WAITING_FOR_SANDBOX',
  'PREPARING_REPOSITORY',
  'RUNNING_SETUP_SCRIPT',
  'SETTING_UP_GIT_HOOKS',
  'STARTING_CONVERSATION',
  'READY',
] as const satisfies readonly Exclude<StartTaskStatus, 'ERROR'>[];
