export { Color, clamp } from './color'
