#!/bin/sh
# Answers init, then exits at the first other request, as a client that
# crashes does.
while read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	case "$line" in
	*'"type":"init"'*)
		printf '{"id":%s,"type":"init_ok","implements":["lock"],"tokens":true,"name":"exits"}\n' "$id"
		;;
	*)
		echo "exits: giving up on request $id" >&2
		exit 3
		;;
	esac
done
