// run_wasi.mjs WASM [args...]: runs a WASI program under node's node:wasi
// (tools/test_ports.sh), and exits with its status.
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';
import { argv, env, exit } from 'node:process';
const wasi = new WASI({ version: 'preview1', args: argv.slice(2), env, preopens: { '/tmp': '/tmp' }, returnOnExit: true });
const mod = await WebAssembly.compile(await readFile(argv[2]));
const inst = await WebAssembly.instantiate(mod, wasi.getImportObject());
exit(wasi.start(inst));
