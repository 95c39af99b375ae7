/** The hubble cell's errors, each saying what to do. */

/** A flag of the hubble cell has a value it cannot use. */
export class HubbleConfigError extends Error {
  constructor(flag: string, value: string, fix: string) {
    super(`--${flag} ${JSON.stringify(value)}: ${fix}`);
    this.name = 'HubbleConfigError';
  }
}

/** The Hubble socket cannot be served. */
export class HubbleSocketError extends Error {
  constructor(path: string, why: string) {
    super(`Hubble server: cannot listen on unix socket ${path}: ${why} (fix: give --hubble-socket-path a path in a writable directory that no other process serves, or stop the other agent)`);
    this.name = 'HubbleSocketError';
  }
}

/** A GetFlows request whose fields contradict each other. */
export class GetFlowsRequestError extends Error {
  constructor(what: string, fix: string) {
    super(`GetFlows: ${what}: ${fix}`);
    this.name = 'GetFlowsRequestError';
  }
}
