/**
 * Health: every module (and every job) has a scope reporting ok / degraded / stopped with a reason
 * and a time. The whole tree is an Observable and a snapshot, for the status API.
 */
import { BehaviorSubject, defer, type Observable } from 'rxjs';
import { token } from './token.js';

/** Health levels, cilium/hive's. `unknown` until a scope first reports. */
export type HealthLevel = 'ok' | 'degraded' | 'stopped' | 'unknown';

/** One node of the health tree. */
export interface HealthNode {
  readonly name: string;
  readonly level: HealthLevel;
  readonly message: string;
  readonly error?: string;
  readonly updatedAt: string;
  readonly children: readonly HealthNode[];
}

/** A health scope: report the state of the thing it stands for. */
export interface Health {
  ok(message: string): void;
  degraded(message: string, error?: Error): void;
  stopped(message: string): void;
  /** A child scope, e.g. one per job or per controller. */
  scope(name: string): Health;
  /** Removes this scope from the tree. */
  close(): void;
}

/** Token for the module's Health scope. */
export const HealthToken = token<Health>('Health');

/** The whole health tree. */
export interface HealthTree {
  /** The tree now. */
  snapshot(): HealthNode;
  /** Emits the tree on every change. */
  readonly tree$: Observable<HealthNode>;
}

/** Token for the hive-wide health tree. */
export const HealthTreeToken = token<HealthTree>('HealthTree');

interface MutableNode {
  name: string;
  level: HealthLevel;
  message: string;
  error?: string;
  updatedAt: string;
  children: Map<string, MutableNode>;
  parent?: MutableNode;
}

/** Worst level first: a parent shows the worst level among itself and its children. */
const RANK: Record<HealthLevel, number> = { degraded: 3, stopped: 2, ok: 1, unknown: 0 };

/**
 * The hive's health registry; hands out scopes and publishes the tree. A report copies the whole
 * tree only while someone follows tree$; otherwise the copy is made when snapshot() or a new
 * subscriber asks (reports come per endpoint change: thousands a second at scale).
 */
export class HealthRegistry implements HealthTree {
  private readonly root: MutableNode = newNode('agent');
  private readonly subject = new BehaviorSubject<HealthNode>(freeze(this.root));
  /** A report came while nobody followed tree$: the subject's value is stale. */
  private stale = false;
  /** See HealthTree. */
  readonly tree$: Observable<HealthNode> = defer(() => {
    this.refresh();
    return this.subject.asObservable();
  });

  /** See HealthTree. */
  snapshot(): HealthNode {
    this.refresh();
    return this.subject.getValue();
  }

  private refresh(): void {
    if (!this.stale) return;
    this.stale = false;
    this.subject.next(freeze(this.root));
  }

  /** A scope at `path` below the root (modules nest). */
  scopeAt(path: readonly string[]): Health {
    let node = this.root;
    for (const name of path) node = this.child(node, name);
    return this.wrap(node);
  }

  private child(parent: MutableNode, name: string): MutableNode {
    let c = parent.children.get(name);
    if (!c) {
      c = newNode(name);
      c.parent = parent;
      parent.children.set(name, c);
    }
    return c;
  }

  private wrap(node: MutableNode): Health {
    const set = (level: HealthLevel, message: string, error?: Error): void => {
      node.level = level;
      node.message = message;
      node.error = error?.message;
      node.updatedAt = new Date().toISOString();
      this.publish();
    };
    return {
      ok: (m) => set('ok', m),
      degraded: (m, e) => set('degraded', m, e),
      stopped: (m) => set('stopped', m),
      scope: (name) => this.wrap(this.child(node, name)),
      close: () => {
        node.parent?.children.delete(node.name);
        this.publish();
      },
    };
  }

  private publish(): void {
    if (this.subject.observed) this.subject.next(freeze(this.root));
    else this.stale = true;
  }
}

function newNode(name: string): MutableNode {
  return { name, level: 'unknown', message: '', updatedAt: new Date().toISOString(), children: new Map() };
}

function freeze(n: MutableNode): HealthNode {
  const children = [...n.children.values()].map(freeze);
  let level = n.level;
  for (const c of children) if (RANK[c.level] > RANK[level] && c.level !== 'stopped') level = c.level;
  if (level === 'unknown' && children.length && children.every((c) => c.level === 'ok')) level = 'ok';
  return Object.freeze({ name: n.name, level, message: n.message, error: n.error, updatedAt: n.updatedAt, children });
}
