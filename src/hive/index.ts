/**
 * cellium/hive: a dependency-injection framework of cells, modules, lifecycle, config, jobs,
 * health and controllers, in cilium/hive's shape, built on inversify and rxjs.
 */
export * from './token.js';
export * from './cell.js';
export * from './errors.js';
export * from './config/index.js';
export * from './lifecycle.js';
export * from './health.js';
export * from './jobs.js';
export * from './shutdowner.js';
export * from './logger.js';
export * from './builtins.js';
export * from './controller/controller.js';
export * from './controller/manager.js';
export { Hive, loadCells, type HiveOptions } from './hive.js';
export { describeHive, dotGraph } from './describe.js';
export { testHive, testLifecycle, type TestHive, type TestHiveOptions, type TestLifecycle, type Replacement, type TestLike, type NodeTestLike } from './testing.js';
export { injectable, inject, multiInject, optional, Container, ContainerModule } from 'inversify';
export { withTimeout, sleep } from './timeout.js';
