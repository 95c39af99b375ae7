/**
 * Batches: several link changes, addresses, routes, neighbours and sysctl writes applied in order
 * as one job on a libuv worker thread, on one netlink socket opened for the batch (inside the
 * target namespace, on a short-lived native thread, when a namespace path is given). A pod's whole
 * interface setup is then one thread hop instead of one per operation. The first failure stops the
 * batch and rejects with a {@link NetlinkError} whose `step` is the failing step's index.
 */
import { invalidArgument, toNetlinkError } from './errors.js';
import { loadAddon, type RawStep } from './native.js';
import { sysctlPath } from './netlink.js';
import { rawRoute } from './route-spec.js';
import type { LinkChange, RouteSpec } from './types.js';

/** One step of a batch. */
export type NetlinkStep =
  | { readonly op: 'setLink'; readonly name: string; readonly change: Omit<LinkChange, 'netns'> }
  | { readonly op: 'addAddress'; readonly dev: string; readonly cidr: string; readonly noDad?: boolean }
  | { readonly op: 'addRoute'; readonly route: RouteSpec }
  | { readonly op: 'addNeighbor'; readonly dev: string; readonly ip: string; readonly mac: string; readonly permanent?: boolean }
  | { readonly op: 'writeSysctl'; readonly key: string; readonly value: string | number };

function toRaw(step: NetlinkStep, i: number, nud: { permanent: number; reachable: number }): RawStep {
  const op = (step as { op?: unknown }).op;
  switch (step.op) {
    case 'setLink':
      return { op: 'setLink', name: step.name, change: { ...step.change } };
    case 'addAddress':
      return { op: 'addAddress', dev: step.dev, cidr: step.cidr, noDad: step.noDad ?? false };
    case 'addRoute':
      return { op: 'addRoute', route: rawRoute(step.route, 'addRoute') };
    case 'addNeighbor':
      return { op: 'addNeighbor', dev: step.dev, ip: step.ip, mac: step.mac, state: step.permanent === false ? nud.reachable : nud.permanent };
    case 'writeSysctl':
      return { op: 'writeSysctl', path: sysctlPath(step.key), value: String(step.value) };
    default:
      throw invalidArgument('applySteps', '', `step ${i}: unknown op ${JSON.stringify(op)}`);
  }
}

/**
 * Applies the steps in order inside the network namespace at netnsPath (the agent's own when
 * undefined). Each step means what the {@link Netlink} method of the same name means.
 */
export async function applyNetlinkSteps(netnsPath: string | undefined, steps: readonly NetlinkStep[]): Promise<void> {
  const { applySteps, nud } = loadAddon();
  const raw = steps.map((s, i) => toRaw(s, i, nud));
  try {
    await applySteps(netnsPath ?? '', raw);
  } catch (err) {
    throw toNetlinkError(err);
  }
}
