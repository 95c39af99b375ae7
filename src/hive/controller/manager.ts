/** The controller manager: named controllers, created or updated by name, listed for the status API. */
import { token } from '../token.js';
import { Controller, type ControllerParams, type ControllerStatus } from './controller.js';

/** Creates, updates, triggers and removes named controllers. */
export interface ControllerManager {
  /** Creates the controller, or replaces its parameters and runs it now. */
  updateController(name: string, params: ControllerParams): void;
  /** Runs a controller now. Returns false when no such controller exists. */
  triggerController(name: string): boolean;
  /** Stops and removes one controller. */
  removeController(name: string): Promise<void>;
  /** Stops and removes every controller. */
  removeAll(): Promise<void>;
  /** Status records, sorted by name; only of the controllers whose names start with `prefix` when given. */
  statuses(prefix?: string): ControllerStatus[];
}

/** Token for the hive-wide controller manager. */
export const ControllerManagerToken = token<ControllerManager>('ControllerManager');

/** The default ControllerManager. */
export class Controllers implements ControllerManager {
  private readonly controllers = new Map<string, Controller>();

  /** See ControllerManager. */
  updateController(name: string, params: ControllerParams): void {
    const c = this.controllers.get(name);
    if (c) c.update(params);
    else this.controllers.set(name, new Controller(name, params));
  }

  /** See ControllerManager. */
  triggerController(name: string): boolean {
    const c = this.controllers.get(name);
    c?.trigger();
    return c !== undefined;
  }

  /** See ControllerManager. */
  async removeController(name: string): Promise<void> {
    const c = this.controllers.get(name);
    if (!c) return;
    this.controllers.delete(name);
    await c.stop();
  }

  /** See ControllerManager. */
  async removeAll(): Promise<void> {
    const all = [...this.controllers.keys()];
    await Promise.all(all.map((n) => this.removeController(n)));
  }

  /** See ControllerManager. */
  statuses(prefix?: string): ControllerStatus[] {
    const all = [...this.controllers.values()];
    const chosen = prefix === undefined ? all : all.filter((c) => c.name.startsWith(prefix));
    return chosen.map((c) => c.status()).sort((a, b) => a.name.localeCompare(b.name));
  }
}
