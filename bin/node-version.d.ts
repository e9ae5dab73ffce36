/** Types of node-version.js (plain JavaScript, so that any Node.js can run the check). */
export declare const MIN_NODE_MAJOR: number;
export declare function nodeVersionProblem(version: string): string | undefined;
