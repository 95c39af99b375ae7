/**
 * The policy table's writer with shared policy maps (--bpf-lxc-program=shared): an endpoint's
 * object is realized by pointing its slot at the map of its content (PolicyGroups), so endpoints
 * with the same policy share one map; a deleted object empties the slot and lets the map go when
 * no endpoint uses it.
 */
import type { ReconcileOps } from '../../lib/reconciler/index.js';
import type { PolicyLpmEntry } from '../../maps/policy/key.js';
import type { PolicyGroups } from './policy-groups.js';
import { policyObjectKey, type PolicyObject } from './tables.js';

/**
 * Writes the policy table through `groups`. `endpoints()` names the endpoints whose maps the agent
 * owns now (listed for pruning); `wanted(id)` is the policy each is to have.
 */
export function sharedPolicyOps(
  groups: PolicyGroups, endpoints: () => Iterable<number>, wanted: (endpointId: number) => readonly PolicyLpmEntry[] | undefined,
): ReconcileOps<PolicyObject> {
  return {
    async update(batch) {
      const failed = await groups.realize(batch.map(([, v]) => v), wanted);
      return new Map([...failed].map(([id, err]) => [policyObjectKey(id), err]));
    },
    async delete(keys) {
      const failed = new Map<string, Error>();
      for (const k of keys) {
        try {
          await groups.leave(Number(k));
        } catch (err) {
          failed.set(k, err as Error);
        }
      }
      return failed;
    },
    async list() {
      const out = new Map<string, PolicyObject>();
      for (const [id, entries] of await groups.list(endpoints())) out.set(policyObjectKey(id), { endpointId: id, entries });
      return out;
    },
  };
}
