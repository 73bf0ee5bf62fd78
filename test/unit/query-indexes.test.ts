// The index rule that every test app applies to its service's commands (helpers/query-indexes.ts).
import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';
import { createModels } from '../../models/index.js';
import { declaredIndexes, queriesOf, unservedReason } from '../helpers/query-indexes.js';

const indexes = declaredIndexes(createModels(mongoose.createConnection()));
const find = (collection: string, filter: object, sort: object = {}, limit?: number) =>
  queriesOf({ commandName: 'find', command: { find: collection, filter, sort, ...(limit ? { limit } : {}) } })[0]!;
const served = (query: ReturnType<typeof find>) => unservedReason(query, indexes) === null;

describe('the index rule', () => {
  it('reads the declared indexes of every model, _id first', () => {
    expect(indexes.get('app_conversations')).toEqual([
      [['_id', 1]],
      [
        ['userId', 1],
        ['createdAt', -1],
        ['_id', -1],
      ],
      [['sandboxId', 1]],
      [
        ['orgId', 1],
        ['createdAt', -1],
        ['_id', -1],
      ],
      [
        ['userId', 1],
        ['updatedAt', -1],
        ['_id', -1],
      ],
      [
        ['userId', 1],
        ['title', 1],
        ['_id', 1],
      ],
    ]);
    expect(indexes.get('settings')).toEqual([[['_id', 1]], [['userId', 1]]]);
  });

  it('serves equality on a leading key, and the sort that follows it in either direction', () => {
    expect(served(find('settings', { userId: 'u' }))).toBe(true);
    expect(served(find('app_conversations', { userId: 'u' }, { createdAt: -1, _id: -1 }))).toBe(true);
    expect(served(find('app_conversations', { userId: 'u' }, { createdAt: 1, _id: 1 }))).toBe(true);
    expect(served(find('app_conversations', { userId: 'u', title: { $regex: 'x' } }, { createdAt: -1 }))).toBe(true);
    expect(served(find('start_task_queue', { dueAt: { $lte: new Date() } }, { dueAt: 1 }))).toBe(true);
  });

  it('serves _id lookups, and a single document with no filter', () => {
    expect(served(find('start_tasks', { _id: 'x', status: { $nin: ['READY'] } }))).toBe(true);
    expect(served(find('app_conversations', { userId: 'u', _id: { $in: ['a', 'b'] } }))).toBe(true);
    expect(served(find('api_keys', {}, {}, 1))).toBe(true);
  });

  it('refuses scans and in-memory sorts', () => {
    expect(unservedReason(find('start_tasks', { status: { $nin: ['READY', 'ERROR'] } }, { createdAt: 1 }), indexes)).toMatch(
      /no index of start_tasks serves filter \{"status":\{"\$nin":\["string"\]\}\}/,
    );
    expect(served(find('app_conversations', { userId: 'u' }, { createdAt: -1, _id: 1 }))).toBe(false); // mixed directions
    expect(served(find('app_conversations', { userId: 'u' }, { sandboxId: 1 }))).toBe(false); // indexed, but not after userId
    // as the driver sends it: a Map
    expect(
      served(
        find(
          'app_conversations',
          { userId: 'u' },
          new Map([
            ['createdAt', -1],
            ['_id', 1],
          ]),
        ),
      ),
    ).toBe(false);
    expect(
      served(
        find(
          'app_conversations',
          { userId: 'u' },
          new Map([
            ['createdAt', -1],
            ['_id', -1],
          ]),
        ),
      ),
    ).toBe(true);
    expect(served(find('app_conversations', { selected_repository: 'r' }))).toBe(false);
    expect(served(find('app_conversations', {}))).toBe(false);
    expect(unservedReason(find('nowhere', { a: 1 }), indexes)).toMatch(/no model declares/);
  });

  it('checks every query of update and delete commands, each $or branch, and the $match of aggregations', () => {
    const update = queriesOf({
      commandName: 'update',
      command: { update: 'settings', updates: [{ q: { userId: 'u' } }, { q: { language: 'en' }, multi: true }] },
    });
    expect(update.map(served)).toEqual([true, false]);
    const claim = queriesOf({
      commandName: 'findAndModify',
      command: { findAndModify: 'start_tasks', query: { $or: [{ userId: 'u' }, { leaseExpiresAt: null }] } },
    })[0]!;
    expect(unservedReason(claim, indexes)).toMatch(/leaseExpiresAt/);
    const count = queriesOf({
      commandName: 'aggregate',
      command: { aggregate: 'app_conversations', pipeline: [{ $match: { userId: 'u' } }, { $group: { _id: 1, n: { $sum: 1 } } }] },
    })[0]!;
    expect(served(count)).toBe(true);
    expect(queriesOf({ commandName: 'insert', command: { insert: 'settings' } })).toEqual([]);
    expect(queriesOf({ commandName: 'find', command: { find: 'x', filter: {}, comment: 'migration: test' } })).toEqual([]);
    expect(unservedReason(queriesOf({ commandName: 'mapReduce', command: { mapReduce: 'settings' } })[0]!, indexes)).toMatch(
      /does not understand/,
    );
  });
});
