// The real `edgecv serve` process helpers live with the bench (npm run fuzz and soak use them too).
export { eventually, freePort, startServerProcess, type ServerProcess } from '../../bench/server-process.js';
