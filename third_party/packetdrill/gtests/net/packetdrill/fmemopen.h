/*
 * Copyright 2013 Google Inc.
 *
 * This program is free software; you can redistribute it and/or
 * modify it under the terms of the GNU General Public License
 * as published by the Free Software Foundation; either version 2
 * of the License, or (at your option) any later version.
 *
 * This program is distributed in the hope that it will be useful,
 * but WITHOUT ANY WARRANTY; without even the implied warranty of
 * MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
 * GNU General Public License for more details.
 *
 * You should have received a copy of the GNU General Public License
 * along with this program; if not, write to the Free Software
 * Foundation, Inc., 51 Franklin Street, Fifth Floor, Boston, MA
 * 02110-1301, USA.
 */
/*
 * Author: ncardwell@google.com (Neal Cardwell)
 *
 * FreeBSD does not have an fmemopen(), so we roll our own minimalist
 * implementation here.
 */

#ifndef __FMEMOPEN_H__
#define __FMEMOPEN_H__

#ifndef HAVE_FMEMOPEN

#include "types.h"

extern FILE *fmemopen(char *buf, size_t size, const char *mode);

#endif  /* HAVE_FMEMOPEN */

#endif /* __FMEMOPEN_H__ */
