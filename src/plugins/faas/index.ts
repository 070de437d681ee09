import { azureFunctions } from './azure-functions.js';
import { awsLambda, cloudFunction } from './cloud-function.js';
import { openfunction } from './openfunction.js';
import { openwhisk } from './openwhisk.js';

/** The function-as-a-service family: nodes that replace the upstream with a function callout. */
export const faasPlugins = [cloudFunction, awsLambda, azureFunctions, openwhisk, openfunction] as const;
