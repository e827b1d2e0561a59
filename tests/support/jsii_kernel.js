'use strict';
// The jsii kernel (jsii's lib/program.js) run in the process the Python runtime starts, without jsii's
// relay process (bin/jsii-runtime.js). The relay spawns the kernel as a child, copies every API message
// between its own stdin/stdout and the child's fd 3, and wraps the child's console output as
// {"stdout"|"stderr": <base64>} lines on its stderr, which the Python side's stderr_sink unwraps. Here the
// kernel's fd 3 is this process's stdin (requests) and stdout (responses), and all console output,
// console.*, process.stdout/stderr and direct writes to fd 1/2, gets the same envelope on fd 2, so
// nothing but API messages ever reaches stdout. Used by the test suite only (tests/support/jsii_kernel.py).
const fs = require('fs');
const path = require('path');
const { Readable, Writable } = require('stream');

const readSync = fs.readSync;
const writeSync = fs.writeSync;
const API = 3; // the kernel's channel (SyncStdio readFD and writeFD)
const pause = new Int32Array(new SharedArrayBuffer(4));

function writeAll(fd, buffer) {
  let offset = 0;
  while (offset < buffer.length) {
    try {
      offset += writeSync.call(fs, fd, buffer, offset, buffer.length - offset);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
      Atomics.wait(pause, 0, 0, 1); // the reader is behind: wait a millisecond, as the kernel's own writer does
    }
  }
}

function envelope(key, data, encoding) {
  const bytes = Buffer.isBuffer(data) ? data : ArrayBuffer.isView(data)
    ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(String(data), encoding);
  if (bytes.length > 0) writeAll(2, Buffer.from(JSON.stringify({ [key]: bytes.toString('base64') }) + '\n'));
  return bytes.length;
}

function stream(key, fd) {
  const writable = new Writable({
    write(chunk, encoding, callback) {
      envelope(key, chunk, encoding);
      callback();
    },
  });
  writable.fd = fd;
  writable.isTTY = false;
  return writable;
}

fs.readSync = function (fd, ...rest) {
  return readSync.call(fs, fd === API ? 0 : fd, ...rest);
};
fs.writeSync = function (fd, data, ...rest) {
  if (fd === API) return writeSync.call(fs, 1, data, ...rest);
  if (fd === 1 || fd === 2) {
    if (typeof data === 'string') return envelope(fd === 1 ? 'stdout' : 'stderr', data, rest[1]);
    const [offset = 0, length] = rest;
    const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    return envelope(fd === 1 ? 'stdout' : 'stderr', view.subarray(offset, length === undefined ? undefined : offset + length));
  }
  return writeSync.call(fs, fd, data, ...rest);
};

const stdout = stream('stdout', 1);
const stderr = stream('stderr', 2);
const stdin = new Readable({ read() { this.push(null); } }); // as the relay's child: no stdin
for (const [name, value] of [['stdout', stdout], ['stderr', stderr], ['stdin', stdin]]) {
  Object.defineProperty(process, name, { configurable: true, enumerable: true, get: () => value });
}

// The relay starts the kernel with --preserve-symlinks, and the kernel then links packages from jsii's
// package cache instead of copying them file by file (it reads the flag from execArgv).
if (!process.execArgv.includes('--preserve-symlinks')) process.execArgv.push('--preserve-symlinks');
require(path.join(__dirname, 'lib', 'program.js'));
