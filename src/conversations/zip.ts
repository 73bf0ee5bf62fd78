// A small ZIP writer (deflate, UTF-8 names) for the trajectory export: a few files of JSON text,
// far below the format's 4 GiB and 65,535-entry limits (the export is bounded before it gets
// here), so the classic format without ZIP64 serves. node:zlib does the deflate and the CRC-32.
import zlib from 'node:zlib';

const UTF8_NAMES = 0x0800;
const DEFLATE = 8;
const VERSION = 20;

export function zipFiles(files: { name: string; content: string | Buffer }[], at = new Date()): Buffer {
  const time = (at.getHours() << 11) | (at.getMinutes() << 5) | Math.floor(at.getSeconds() / 2);
  const date = ((at.getFullYear() - 1980) << 9) | ((at.getMonth() + 1) << 5) | at.getDate();
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const file of files) {
    const name = Buffer.from(file.name, 'utf8');
    const data = typeof file.content === 'string' ? Buffer.from(file.content, 'utf8') : file.content;
    const packed = zlib.deflateRawSync(data);
    const crc = zlib.crc32(data);
    // The fields local and central headers share, from "version needed" to the name length.
    const common = Buffer.alloc(26);
    common.writeUInt16LE(VERSION, 0);
    common.writeUInt16LE(UTF8_NAMES, 2);
    common.writeUInt16LE(DEFLATE, 4);
    common.writeUInt16LE(time, 6);
    common.writeUInt16LE(date, 8);
    common.writeUInt32LE(crc, 10);
    common.writeUInt32LE(packed.length, 14);
    common.writeUInt32LE(data.length, 18);
    common.writeUInt16LE(name.length, 22);
    common.writeUInt16LE(0, 24); // extra field length
    const local = Buffer.concat([signature(0x04034b50), common, name]);
    parts.push(local, packed);
    const tail = Buffer.alloc(14); // comment length, disk, attributes (all zero), then the local header's offset
    tail.writeUInt32LE(offset, 10);
    central.push(Buffer.concat([signature(0x02014b50), u16(VERSION), common, tail, name]));
    offset += local.length + packed.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(18);
  end.writeUInt16LE(files.length, 4);
  end.writeUInt16LE(files.length, 6);
  end.writeUInt32LE(directory.length, 8);
  end.writeUInt32LE(offset, 12);
  return Buffer.concat([...parts, directory, signature(0x06054b50), end]);
}

const signature = (value: number) => u32(value);
const u16 = (value: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(value, 0);
  return b;
};
const u32 = (value: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value, 0);
  return b;
};
