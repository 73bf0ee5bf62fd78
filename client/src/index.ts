// The client entry point of agent-control-plane: everything a frontend imports.
export { createClient, type AppClient, type ClientOptions, type EventSourceClass } from './create-client.js';
export { fieldErrorsOf, isAppClientError, retryAfterSecondsOf, type AppClientError, type AppErrorData, type FieldError } from './errors.js';
export { START_TASK_STEPS } from './start-task.js';
export { transformer } from './transformer.js';
export { WEBHOOK_EVENT_TYPES } from './webhooks.js';
export type * from './webhooks.js';
export type * from './types.js';
