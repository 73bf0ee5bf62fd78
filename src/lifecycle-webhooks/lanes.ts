// The lanes' side of the lease queue (src/db/lease-queue.ts): a lane is an endpoint
// and a resource with deliveries pending (webhook_lanes, one small record each, so finding
// work never reads the history). One replica at a time holds a lane's lease and sends its
// deliveries in order; each claim is decided by inserting its key (src/db/claims.ts), so it is
// exclusive on MongoDB and FerretDB alike. While leased, a lane is due when its lease ends: a
// replica that died mid-lane is replaced then. Lanes of users who hold their share of this
// replica's lanes, or were served this round, are passed over (fair shares, lease-queue.ts).
import type { Models, WebhookLaneRecord } from '../../models/index.js';
import type { DecisionClaims } from '../db/claims.js';
import type { LeaseStore } from '../db/lease-queue.js';

export type Lane = WebhookLaneRecord & { _id: string };

/** Due lanes looked at per claim (of these, ones another replica has just taken are passed over). */
const CANDIDATES = 8;

export function webhookLanes(models: Models, claims: DecisionClaims, now: () => number = Date.now): LeaseStore<Lane> {
  const { WebhookLane } = models;
  /**
   * This claim of the lane, decided by its key; or, when that key was taken so long ago that its
   * taker must have died before leasing the lane (it would have leased it at once), a takeover
   * decided by a key naming that stale claim, so the lane waits about two leases, not until
   * the claims are pruned.
   */
  const claimLane = async (lane: Lane, at: Date, leaseMs: number): Promise<boolean> => {
    const key = `webhook-lane:${lane._id}:${lane.incarnation ?? ''}:${lane.claims}`;
    if (await claims.claim(key)) return true;
    const taken = await models.Claim.findOne({ _id: key }, { at: 1 }).lean();
    if (!taken || at.getTime() - taken.at.getTime() < 2 * leaseMs) return false;
    return claims.claim(`${key}:after:${taken.at.getTime()}`);
  };
  return {
    claim: async (owner, leaseMs, passOver) => {
      const at = new Date(now());
      const users = passOver.length > 0 ? { userId: { $nin: [...passOver] } } : {};
      for (const lane of await WebhookLane.find({ dueAt: { $lte: at }, ...users })
        .sort({ dueAt: 1 })
        .limit(CANDIDATES)
        .lean()) {
        if (lane.leaseOwner && lane.leaseExpiresAt && lane.leaseExpiresAt > at) {
          // Woken while leased: its holder sends what came; look again when the lease ends.
          await WebhookLane.updateOne({ _id: lane._id, leaseOwner: lane.leaseOwner }, { $set: { dueAt: lane.leaseExpiresAt } });
          continue;
        }
        if (!(await claimLane(lane, at, leaseMs))) continue;
        const leaseEnd = new Date(at.getTime() + leaseMs);
        const record = await WebhookLane.findOneAndUpdate(
          { _id: lane._id, incarnation: lane.incarnation, claims: lane.claims },
          { $set: { leaseOwner: owner, leaseExpiresAt: leaseEnd, dueAt: leaseEnd }, $inc: { claims: 1 } },
          { new: true },
        ).lean();
        if (record) return record;
      }
      return null;
    },
    renew: async (id, owner, leaseMs) => {
      const leaseEnd = new Date(now() + leaseMs);
      await WebhookLane.updateOne({ _id: id, leaseOwner: owner }, { $set: { leaseExpiresAt: leaseEnd, dueAt: leaseEnd } });
    },
    release: async (ids, owner) => {
      for (const id of ids) {
        await WebhookLane.updateOne(
          { _id: id, leaseOwner: owner },
          { $set: { leaseOwner: null, leaseExpiresAt: null, dueAt: new Date(now()) } },
        );
      }
    },
  };
}
