// Worker-thread entry of a SIGHUP reload: runs the resources loader (the same one as boot and
// `tollgate validate`) off the main thread and posts its LoadResult back.
import { parentPort, workerData } from 'node:worker_threads';
import { loadResourcesFile } from '../resources/loader.ts';

const { file } = workerData as { file: string };
parentPort!.postMessage(loadResourcesFile(file, process.env));
