// The database boundary's one failure: whatever the driver or mongoose says when the server
// is unreachable, stalled or restarting becomes AppError SERVICE_UNAVAILABLE
// (reason database_unavailable, with retryAfterSeconds), so no caller ever shows
// "connect ECONNREFUSED 127.0.0.1:<port>" or answers 500 for an outage.
import {
  MongoClientClosedError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';
import type { Schema } from 'mongoose';
import { AppError } from '../errors.js';

/** When to retry after an outage answer: the embedded database restarts within a few seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

// The driver's exported classes (subclasses included), and by name its connection-pool
// errors (not exported) and mongoose's own server-selection error.
const UNAVAILABLE_CLASSES = [
  MongoNetworkError,
  MongoServerSelectionError,
  MongoOperationTimeoutError,
  MongoNotConnectedError,
  MongoTopologyClosedError,
  MongoServerClosedError,
  MongoClientClosedError, // an operation the client's close() interrupted (a request racing a shutdown)
];
const UNAVAILABLE_NAMES = new Set([
  'MongoPoolClearedError',
  'PoolClearedOnNetworkError',
  'MongoPoolClosedError',
  'MongoWaitQueueTimeoutError',
  'MongooseServerSelectionError',
]);

// A socket error the driver passed on as is (e.g. EPIPE writing to a server that just died).
const SOCKET_ERROR_CODES = new Set([
  'EPIPE',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTCONN',
]);

// Server-side time limit hit, or the server shutting down / restarting under the operation.
const UNAVAILABLE_CODES = new Set([50, 91, 11600, 11602, 189]);

/** True for the driver's and mongoose's ways of saying "no database right now". */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code, message } = error as { name?: unknown; code?: unknown; message?: unknown };
  if (UNAVAILABLE_CLASSES.some((type) => error instanceof type)) return true;
  if (typeof name === 'string' && UNAVAILABLE_NAMES.has(name)) return true;
  if (typeof code === 'number' && UNAVAILABLE_CODES.has(code)) return true;
  if (typeof code === 'string' && SOCKET_ERROR_CODES.has(code)) return true;
  // mongoose with bufferCommands off, before or after a lost connection.
  return name === 'MongooseError' && typeof message === 'string' && /initial connection|connection .*closed|not connected/i.test(message);
}

export function databaseUnavailable(cause?: unknown): AppError {
  return new AppError('SERVICE_UNAVAILABLE', 'Database unavailable, retry shortly', {
    reason: 'database_unavailable',
    retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    cause,
  });
}

const QUERY_OPERATIONS = [
  'find',
  'findOne',
  'countDocuments',
  'estimatedDocumentCount',
  'distinct',
  'updateOne',
  'updateMany',
  'replaceOne',
  'deleteOne',
  'deleteMany',
  'findOneAndUpdate',
  'findOneAndDelete',
  'findOneAndReplace',
] as const;

/**
 * Mongoose plugin (applied to every model of a connection): error middleware that swaps an
 * outage error for databaseUnavailable() on every query, save (create), insertMany and
 * aggregate. Other errors pass through unchanged.
 */
export function mapUnavailableErrors(schema: Schema): void {
  const map = (error: unknown, _result: unknown, next: (error?: unknown) => void) =>
    next(isDatabaseUnavailable(error) ? databaseUnavailable(error) : error);
  schema.post([...QUERY_OPERATIONS], { query: true, document: false }, map as never);
  schema.post(['save', 'deleteOne', 'updateOne'], { document: true, query: false }, map as never);
  schema.post('insertMany', map as never);
  schema.post('aggregate', map as never);
}
