#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fetches and unpacks one source distribution from PyPI, its sha256 checked.
#
# Reads PEP 503's simple index (the sdist's link carries its sha256) and fetches
# the file with curl. `pip download --no-binary` would do the same but first
# builds the package's metadata: for mpi4py 4.1.1 that took 3.5 minutes of this
# 2-core machine, for a file fetched in under a second.
#
# usage: pypi_sdist.sh <project> <version> <dir>
# Leaves the tree in <dir>/<project>-<version>/ (lower-case project name); exit 1
# with a one-line reason on failure.
set -uo pipefail
project=$1 version=$2
mkdir -p "$3"
work=$(cd "$3" && pwd)
name=$(echo "$project" | tr 'A-Z' 'a-z')
tree="$work/$name-$version"
[ -d "$tree" ] && [ -n "$(ls -A "$tree")" ] && exit 0
# The file name spells the project with '-' or '_' (PEP 625's sdists: mpi4py_fft-2.0.6).
file_name=$(echo "$name" | sed 's/[-_.]/[-_.]/g')
link=$(curl -fsSL "https://pypi.org/simple/$name/" |
  grep -oiE "href=\"[^\"]*/$file_name-$version\.tar\.gz#sha256=[0-9a-f]+\"" | head -n 1)
[ -n "$link" ] || { echo "no sdist of $project $version on PyPI's simple index"; exit 1; }
link=${link#href=\"}
link=${link%\"}
url=${link%%#*} sha=${link##*sha256=}
archive="$work/$name-$version.tar.gz"
curl -fsSL -o "$archive" "$url" || { echo "download of $url failed"; exit 1; }
echo "$sha  $archive" | sha256sum -c --quiet - || { echo "sha256 mismatch for $url"; exit 1; }
mkdir -p "$tree" && tar -xzf "$archive" -C "$tree" --strip-components=1 ||
  { rm -rf "$tree"; echo "cannot unpack $archive"; exit 1; }
