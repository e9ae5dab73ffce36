// Child-process entry of a SIGHUP reload: receives the file and the gateway's environment, runs
// the resources loader (the same one as boot and `tollgate validate`) and sends its LoadResult
// back, then exits so that everything the load allocated goes back to the system.
import { loadResourcesFile } from '../resources/loader.ts';

process.once('message', (msg: { file: string; env: NodeJS.ProcessEnv }) => {
  process.send!(loadResourcesFile(msg.file, msg.env), () => process.disconnect());
});
