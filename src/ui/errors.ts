/** The flow page's errors, each saying what to do. */

/** The address the page would listen on is not usable (not loopback, not HOST:PORT). */
export class UiListenError extends Error {
  constructor(value: string, why: string) {
    super(`--address ${JSON.stringify(value)}: ${why}`);
    this.name = 'UiListenError';
  }
}

/** A filter of the page's query cannot be used: names the parameter, the value and the fix. */
export class UiFilterError extends Error {
  constructor(
    readonly param: string,
    value: string,
    fix: string,
  ) {
    super(`filter ${param} ${JSON.stringify(value)}: ${fix}`);
    this.name = 'UiFilterError';
  }
}

/** The Hubble server the page reads cannot be reached. */
export class UiHubbleUnreachableError extends Error {
  constructor(socket: string, why: string) {
    super(`cannot reach the Hubble server at unix://${socket} (${why}); start the agent with --enable-hubble, or give its --hubble-socket-path`);
    this.name = 'UiHubbleUnreachableError';
  }
}
