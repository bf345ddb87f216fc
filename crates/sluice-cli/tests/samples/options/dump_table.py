# gdb script: the option table a Slurm command hands glibc's getopt_long, as it runs.
#   SLURM_CONF=/path/slurm.conf gdb -q -batch -x dump_table.py --args /usr/bin/squeue --bogus \
#     | grep -E '^(OPTSTRING|OPT) ' > squeue.txt
# Prints `OPTSTRING '<short options>'`, then one `OPT <name> <has_arg> <flag> <val>` line
# per `struct option`, in the table's order. Only the first call is read (sbatch,
# srun and salloc build the same table for every pass).
import struct

import gdb

gdb.execute("set pagination off")
gdb.execute("set breakpoint pending on")
gdb.execute("break getopt_long")
gdb.execute("run")
inferior = gdb.selected_inferior()


def c_string(address):
    out = b""
    while True:
        byte = bytes(inferior.read_memory(address, 1))
        if byte == b"\0":
            return out.decode()
        out += byte
        address += 1


print("OPTSTRING", repr(c_string(int(gdb.parse_and_eval("$rdx")))))
address = int(gdb.parse_and_eval("$rcx"))
while True:
    name, has_arg, _pad, flag, val = struct.unpack("<QiiQi", bytes(inferior.read_memory(address, 28)))
    if name == 0:
        break
    print("OPT", c_string(name), has_arg, flag, val)
    address += 32
gdb.execute("kill")
gdb.execute("quit")
