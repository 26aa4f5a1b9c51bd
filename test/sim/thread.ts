/** A pool thread: runs the tasks it is handed, one at a time, and says when it wants more. */
import { parentPort, workerData } from 'node:worker_threads';
import { runTask, type SimTask } from './task.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const port = parentPort!;
const { saveDir } = workerData as { saveDir?: string };
port.on('message', (tasks: SimTask[]) => {
  void (async () => {
    for (const t of tasks) port.postMessage({ outcome: await runTask(t, saveDir) });
    port.postMessage({ done: true });
  })();
});
port.postMessage({ ready: true });
