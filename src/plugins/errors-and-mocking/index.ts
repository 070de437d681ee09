import { errorHandler } from './error-handler.js';
import { errorPage } from './error-page.js';
import { exitTransformer } from './exit-transformer.js';
import { mocking } from './mocking.js';

/** Answers made up by the gateway: mocked responses, and what a failure or an exit looks like. */
export const errorsAndMockingPlugins = [mocking, errorHandler, exitTransformer, errorPage] as const;
